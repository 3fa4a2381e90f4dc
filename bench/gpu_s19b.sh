#!/usr/bin/env bash
# Session 19: the order effect of NOTES 21.4 step by step in one process (bench/probe_order.py):
# Triton fp32 (2, 128, 64000) fwd / fwd+bwd alone, again, after (16, 512, 4000), after
# (4, 256, 16000), with 8 GiB held, and after freeing it.
#   OUT=out bash bench/gpu_s19b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
A=2x128x64000
timeout -s KILL 240 python3 -m bench.probe_order \
  --sequence "$A,$A,16x512x4000,$A,$A,4x256x16000,$A,hold8g,$A,free,$A" > "$OUT/probe-order.log" 2>&1
echo "probe rc=$?"; grep -E "^step" "$OUT/probe-order.log"; tail -3 "$OUT/probe-order.log"
