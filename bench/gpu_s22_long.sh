#!/usr/bin/env bash
# Session 22: one sequence of 2,000,000 frames (Triton, the staggered forward), same-size copies.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s22_long.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_LONG:-150} python3 -m bench.tune --backend triton --ops cln --quick \
  --parts long > "$OUT/tune-long.log" 2>&1; echo "rc=$?"; cat "$OUT/tune-long.log"
