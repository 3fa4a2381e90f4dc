#!/usr/bin/env bash
# Session 9, first call: the TMA copy path of the cuda_ext streaming cLN kernels
# (include/tma.cuh).  The cuda_ext cLN tests (forced paths, then the shared harness), the
# forward diagnostic levels for TMA and cp.async (bench.diag_cln_stream), and the kernels
# with both copy paths and a few ring shapes, A/B in one call (bench.tune).
#   OUT=out bash bench/gpu_s9.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-150} python3 -m pytest -q -x tests/test_cuda_ext_paths.py \
  --backend cuda_ext > "$OUT/test-paths.log" 2>&1
echo "path tests rc=$?"; tail -15 "$OUT/test-paths.log"
timeout -s KILL ${T_DIAG:-90} python3 -m bench.diag_cln_stream > "$OUT/diag-stream.log" 2>&1
cat "$OUT/diag-stream.log"
timeout -s KILL ${T_CLN:-200} python3 -m bench.tune --backend cuda_ext --ops cln \
  --parts shapes,long --variants "default,cp.async,S2,S3,ppr8 S2,ppr16 S2" \
  > "$OUT/tune-cln.log" 2>&1; cat "$OUT/tune-cln.log"
timeout -s KILL ${T_HARNESS:-120} python3 -m pytest -q tests/test_cln.py --backend cuda_ext \
  > "$OUT/test-cln.log" 2>&1
echo "cln tests rc=$?"; tail -3 "$OUT/test-cln.log"
