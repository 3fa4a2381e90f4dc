#!/usr/bin/env bash
# Session 20, one call on the 1-GPU machine, Triton only: the cLN backward in channel blocks
# (CLN_BWD_MAX_BLOCK_C), bench.tune at the target shapes, fp32 and bf16, against the default.
#   OUT=out bash bench/gpu_s20b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_TUNE:-420} python3 -m bench.tune --backend triton --ops cln --parts shapes \
  --dtype fp32,bf16 \
  --variants "default,bwd loop c256,bwd loop c128,bwd loop c128 tile4096,bwd loop c64" \
  > "$OUT/tune-bwd-loop.log" 2>&1
echo "tune rc=$?"; grep -v '^$' "$OUT/tune-bwd-loop.log"
