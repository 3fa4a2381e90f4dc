#!/usr/bin/env bash
# Session 7, last call: the published pairs loaded two at a time (16-byte vector loads, per-op
# slot stride).  The cuda_ext cLN tests, then the cuda_ext cLN defaults (bench.tune --quick).
#   OUT=out bash bench/gpu_s7e.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-90} python3 -m pytest -q tests/test_cuda_ext_paths.py tests/test_cln.py \
  --backend cuda_ext -k "not rmsnorm" > "$OUT/test-cln.log" 2>&1
echo "cln tests rc=$?"; tail -2 "$OUT/test-cln.log"
timeout -s KILL ${T_CLN:-60} python3 -m bench.tune --backend cuda_ext --ops cln --quick \
  --parts shapes,long > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
