#!/usr/bin/env bash
# Session 8, last call: every test on the GPU (make test-all) for the code of main, then the
# cuda_ext cLN defaults (bench.tune --quick).
#   OUT=out bash bench/gpu_s8_final.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-360} gpu_test_all
timeout -s KILL ${T_CLN:-45} python3 -m bench.tune --backend cuda_ext --ops cln --quick \
  --parts shapes > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
