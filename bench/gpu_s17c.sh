#!/usr/bin/env bash
# Session 17, last call: the placement of the Triton backward's dgamma / dbeta partials again
# (CLN_BWD_LATE_PARTIALS 2, the default, against 0 and 1), two rounds in separate processes,
# because the final cLN benchmark's fp32 (2, 128, 64000) fwd+bwd (135.9 us) was slower than
# this placement's A/B (126.2 us, -s17b-tune-late.log).
#   OUT=out bash bench/gpu_s17c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for round in 1 2; do
  timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --variants "default,early partials,partials after publish" > "$OUT/tune-late-$round.log" 2>&1
  echo "tune round $round rc=$?"; grep fwd_bwd "$OUT/tune-late-$round.log"
done
