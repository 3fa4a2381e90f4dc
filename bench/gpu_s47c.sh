#!/usr/bin/env bash
# Session 47: the host time of whole calls and where one eager fwd+bwd step spends it
# (python3 -m bench.profile_overhead triton: timers around common.api's pieces).
#   OUT=out bash bench/gpu_s47c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 150 python3 -m bench.profile_overhead triton > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; cat "$OUT/overhead.log"
