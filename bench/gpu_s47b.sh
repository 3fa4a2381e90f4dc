#!/usr/bin/env bash
# Session 47: where one Triton call's host time goes, piece by piece
# (python3 -m bench.profile_launch), and the whole calls (python3 -m bench.profile_overhead).
#   OUT=out bash bench/gpu_s47b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 150 python3 -m bench.profile_launch > "$OUT/launch.log" 2>&1
echo "launch rc=$?"; cat "$OUT/launch.log"
timeout -s KILL 150 python3 -m bench.profile_overhead triton --profile > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; head -60 "$OUT/overhead.log"
