#!/usr/bin/env bash
# Session 16, last call: the README's main job (bench/gpu_s15_main.sh: make bench, every backend
# and peer at the target shapes) on the final code (the Triton RMSNorm dw back on torch.sum),
# then the Triton RMSNorm GPU tests of that code.
#   OUT=out bash bench/gpu_s16_main.sh
set -uo pipefail
T_BENCH=${T_BENCH:-300} bash bench/gpu_s15_main.sh
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-60} python3 -m pytest -q -p no:cacheprovider tests/test_rmsnorm.py \
  -k triton > "$OUT/test-triton-rms.log" 2>&1
echo "tests rc=$?"; tail -2 "$OUT/test-triton-rms.log"
