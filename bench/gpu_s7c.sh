#!/usr/bin/env bash
# Session 7: the streaming cLN kernels with 16-byte statistics loads and paired 16-bit output
# conversions.  The cuda_ext cLN tests (path tests: every kernel family forced; the shared
# harness's cuda_ext cases), the diagnostic levels (bench.diag_cln_stream) and the cLN knob
# sweep at the issue shapes (bench.tune), on the GPU.
#   OUT=out bash bench/gpu_s7c.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-240} python3 -m pytest -q tests/test_cuda_ext_paths.py \
  tests/test_cln.py tests/test_rmsnorm.py --backend cuda_ext > "$OUT/test-cln.log" 2>&1
echo "cln tests rc=$?"; tail -3 "$OUT/test-cln.log"
timeout -s KILL ${T_DIAG:-120} python3 -m bench.diag_cln_stream > "$OUT/diag-stream.log" 2>&1
cat "$OUT/diag-stream.log"
timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend cuda_ext --ops cln \
  > "$OUT/tune-cln.log" 2>&1; cat "$OUT/tune-cln.log"
