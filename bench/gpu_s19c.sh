#!/usr/bin/env bash
# Session 19: the kernels' time against where x, dy, dx and y lie (bench/probe_placement.py),
# both compiled backends, the three cLN target shapes, fp32 and bf16.
#   OUT=out bash bench/gpu_s19c.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL 400 python3 -m bench.probe_placement --backends triton,cuda_ext \
  --shapes 2x128x64000,4x256x16000,16x512x4000 --dtypes fp32,bf16 > "$OUT/probe-placement.log" 2>&1
echo "probe rc=$?"; cat "$OUT/probe-placement.log"
