#!/usr/bin/env bash
# Session 23: tiles by program id instead of an atomic ticket (CLN_TICKET_ATOMIC = False, as
# CUB's scan). The Triton cLN tests on the GPU with it, then bench.tune fwd and fwd+bwd against
# the atomic counter, two rounds in separate processes, then the level-0 timelines of both
# directions.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s23d.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_test_triton_cln
T_TUNE=${T_TUNE:-110} gpu_tune_rounds tickets "default,atomic tickets" fwd,fwd_bwd
for d in fwd bwd; do
  timeout -s KILL ${T_TL:-60} python3 -m bench.timeline_cln --direction $d --levels 0 \
    > "$OUT/timeline-$d.log" 2>&1
  echo "timeline $d rc=$?"; grep -E "bwd|fwd|kernel|ticket" "$OUT/timeline-$d.log" | head -40
done
