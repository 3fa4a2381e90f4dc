#!/usr/bin/env bash
# GPU call for the cuda_ext streaming cLN kernels (include/cln_stream.cuh):
# their correctness tests on the GPU, then the knob sweep of bench.tune
# (streaming vs register-tile kernels, tile shapes, ring depth) in one run.
#   bash bench/gpu_stream.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_cuda_ext_paths.py tests/test_cln.py -k "cuda_ext or paths" > "$OUT/tests-stream.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/tests-stream.log"
timeout -s KILL ${T_TUNE:-300} python3 -m bench.tune --backend cuda_ext --ops cln ${TUNE_ARGS:-} \
  > "$OUT/tune-cln-stream.log" 2>&1; cat "$OUT/tune-cln-stream.log"
