#!/usr/bin/env bash
# Session 18, first call: the Triton forward in two reads of each tile (CLN_FWD_LAG), its GPU
# tests, then the lag / hint / tile sweep against the single-pass default.
#   OUT=out bash bench/gpu_s18.sh   (at 916a4ce; the kernel was removed after this call, NOTES 21.1)
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 150 python3 -m pytest -q -x tests/test_triton_paths.py -k "lag or default" \
  > "$OUT/test-lag.log" 2>&1
echo "lag tests rc=$?"; tail -3 "$OUT/test-lag.log"
timeout -s KILL ${T_TUNE:-400} python3 -m bench.tune --backend triton --ops cln --parts shapes \
  --variants "default,lag2,lag4,lag8,lag16,lag4 nohints,lag4 minrow128,lag4 ept32" \
  > "$OUT/tune-lag.log" 2>&1
echo "tune rc=$?"; grep -v '^$' "$OUT/tune-lag.log" | tail -100
