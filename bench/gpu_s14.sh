#!/usr/bin/env bash
# Session 14, first call: the two-read probe (bench/l2_window.py; NOTES 17).
#   OUT=out bash bench/gpu_s14.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_PROBE:-240} python3 -m bench.l2_window --row-bytes 128,256 --ahead 1,2,4,8 \
  --bps 2,4 > "$OUT/l2-window.log" 2>&1
echo "probe rc=$?"; cat "$OUT/l2-window.log"
