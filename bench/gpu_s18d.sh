#!/usr/bin/env bash
# Session 18: bisecting 21.4's full-run slowdown of Triton's fp32 (2, 128, 64000) fwd+bwd: the
# full cLN benchmark of gpu_bench_cln without cuda_ext (same shapes, dtypes, peers, order).
#   OUT=out bash bench/gpu_s18d.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 200 python3 -m bench --op cln --backend triton \
  --peers eager,compile --mode fwd,fwd_bwd --dtype fp32,bf16 \
  --shapes 16x512x4000,4x256x16000,2x128x64000,80x64x301 --cuda-graph all --budget 0.15 \
  --out "$OUT" --tag no-cuda-ext > "$OUT/bench-no-cuda-ext.log" 2>&1
echo "rc=$?"; grep -E "^\| .* \| triton " "$OUT/nvidia-h200-no-cuda-ext.md"
