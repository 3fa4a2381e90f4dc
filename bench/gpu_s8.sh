#!/usr/bin/env bash
# Session 8, first call: the cuda_ext cLN ring / lead / group sweep with a same-size copy
# reference (bench.tune), then every test on the GPU (make test-all) for the code of main.
#   OUT=out bash bench/gpu_s8.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_CLN:-190} python3 -m bench.tune --backend cuda_ext --ops cln \
  --parts copy,shapes > "$OUT/tune-cln-sweep.log" 2>&1; echo "tune rc=$?"
cat "$OUT/tune-cln-sweep.log"
T_TESTS=${T_TESTS:-320} gpu_test_all
