#!/usr/bin/env bash
# Session 50, after gpu_s50c.sh (runs of 2-16 tiles left level 3 where it was): tickets in runs
# as long as a sequence (sequence-major: about 1.6 of 4 sequences in flight at (4, 256, 16000)
# instead of all 4, 3 of 16 at (16, 512, 4000)) and half a sequence, at the ablation levels, fp32
# and bf16 (every target case has 125 / 500 / 1000 tiles a sequence), into $OUT/ablate50e.log;
# archived into $OUT/s50e.tgz.
#   OUT=out bash bench/gpu_s50e.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for c in "16x512x4000 125" "4x256x16000 500" "2x128x64000 1000"; do
  set -- $c
  timeout -s KILL 150 python3 -m bench.ablate_cln --no-runs --shapes "$1" \
    --with "seq:CLN_TICKET_RUN=$2" --with "half:CLN_TICKET_RUN=$(( $2 / 2 ))" \
    >> "$OUT/ablate50e.log" 2>&1
  echo "ablate $1 rc=$?"
done
cat "$OUT/ablate50e.log"
gpu_archive s50e
