#!/usr/bin/env bash
# Session 12, probe: does a second read of x right after a first come from the L2?
# (bench/l2_reuse.py; bench/results/nvidia-h200-s12b-l2-reuse.log; NOTES 15.)
#   OUT=out bash bench/gpu_s12b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 200 python3 -m bench.l2_reuse > "$OUT/l2-reuse.log" 2>&1
echo "rc=$?"; cat "$OUT/l2-reuse.log"
