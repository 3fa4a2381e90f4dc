#!/usr/bin/env bash
# Session 20, one call on the 1-GPU machine:
# 1. The column sums of the cLN backward's partials loading up to 64 rows at once
#    (COLSUM_BLOCK_R) against 8 (the code before) and 32: bench.tune, fp32 and bf16.
# 2. make test-all on this code (pytest-xdist, 4 processes, where .whl/ has it).
#   OUT=out bash bench/gpu_s20.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend triton --ops cln --parts shapes \
  --dtype fp32,bf16 --variants "default,colsum rows8,colsum rows32" \
  > "$OUT/tune-colsum.log" 2>&1
echo "tune rc=$?"; grep -v '^$' "$OUT/tune-colsum.log"
T_TESTS=${T_TESTS:-330} gpu_test_all
grep -A18 "slowest" "$OUT/test-all.log" | head -20
