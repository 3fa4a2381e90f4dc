#!/usr/bin/env bash
# Session 16, final call: the cLN benchmark with its peers (both backends, eager, torch.compile)
# on the final Triton backward (colsum, minimum rows per dtype), then the GPU tests of the
# Triton backend, of colsum and of the shared harness's one-parameter backward (all backends).
#   OUT=out bash bench/gpu_s16_final.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_bench_cln 200
timeout -s KILL ${T_TESTS:-240} python3 -m pytest -q -p no:cacheprovider \
  tests/test_cln.py tests/test_rmsnorm.py tests/test_triton_paths.py tests/test_triton_compile.py \
  -k "triton or colsum or one_param" > "$OUT/test-triton.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton.log"
