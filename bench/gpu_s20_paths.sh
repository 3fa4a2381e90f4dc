#!/usr/bin/env bash
# Session 20, after the final test-all: the Triton path tests on the GPU again, with the test of
# the 16-bit backward's tile rule added after that run (Triton only, xdist where available).
#   OUT=out bash bench/gpu_s20_paths.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-240} python3 -m pytest -q -rs -p no:cacheprovider $(gpu_xdist_args) \
  tests/test_triton_paths.py > "$OUT/test-triton-paths.log" 2>&1
echo "test_triton_paths rc=$?"; tail -3 "$OUT/test-triton-paths.log"
