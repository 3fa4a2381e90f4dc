#!/usr/bin/env bash
# Session 18: bisecting 21.4 further: Triton alone, fp32, no peers, with (16, 512, 4000) run
# before (2, 128, 64000) in the same process.
#   OUT=out bash bench/gpu_s18e.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 100 python3 -m bench --op cln --backend triton --mode fwd,fwd_bwd --dtype fp32 \
  --shapes 16x512x4000,2x128x64000 --cuda-graph all --budget 0.15 \
  --out "$OUT" --tag after-c512 > "$OUT/bench-after-c512.log" 2>&1
echo "rc=$?"; grep -E "^\| .* \| triton " "$OUT/nvidia-h200-after-c512.md"
