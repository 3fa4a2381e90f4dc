#!/usr/bin/env bash
# Session 22: the Triton cLN forward with its first wave of tickets staggered (CLN_FWD_STAGGER).
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s22c.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_PROBE:-400} python3 -m bench.timeline_cln --stagger ${SPREADS:-1000,2000,4000,8000} \
  > "$OUT/timeline-stagger.log" 2>&1
echo "stagger rc=$?"; grep -E "^\(|spread .* us [0-9]|span" "$OUT/timeline-stagger.log"
