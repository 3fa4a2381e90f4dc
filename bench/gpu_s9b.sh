#!/usr/bin/env bash
# Session 9, second call: the streaming cLN kernels' tiles scheduled time-major
# (NORMK_CLN_ORDER=1: the blocks on consecutive tiles of one sequence) against batch-major
# (0, the default so far), A/B in one call: the forced-path tests under time-major, the
# diagnostic levels, the kernels (bench.tune) under both orders.
#   OUT=out bash bench/gpu_s9b.sh
set -uo pipefail
source bench/gpu_env.sh
NORMK_CLN_ORDER=1 timeout -s KILL ${T_TESTS:-120} python3 -m pytest -q -x \
  tests/test_cuda_ext_paths.py --backend cuda_ext > "$OUT/test-paths-order1.log" 2>&1
echo "path tests (time-major) rc=$?"; tail -3 "$OUT/test-paths-order1.log"
NORMK_CLN_ORDER=1 timeout -s KILL ${T_DIAG:-90} python3 -m bench.diag_cln_stream \
  > "$OUT/diag-stream-order1.log" 2>&1; cat "$OUT/diag-stream-order1.log"
for order in 0 1 0 1; do
  echo "== NORMK_CLN_ORDER=$order"
  NORMK_CLN_ORDER=$order timeout -s KILL ${T_CLN:-80} python3 -m bench.tune --backend cuda_ext \
    --ops cln --parts shapes,long --variants "default,S3,G1024" 2>&1
done > "$OUT/tune-cln-order.log"; cat "$OUT/tune-cln-order.log"
