#!/usr/bin/env bash
# Session 11, first call: the persistent Triton cLN kernels (CLN_PERSISTENT, CLN_PERSISTENT_BWD)
# on the GPU: their tests, then a sweep of their knobs against tiles by ticket
# (bench/results/nvidia-h200-s11-tune-persist.log, -s11-test-triton-cln.log; NOTES 14.1).
# The persistent kernels were slower everywhere and were removed afterwards: run this at commit
# 8143803 (at later commits the tests select nothing new and the sweep's "p ..." variants fail).
#   OUT=out bash bench/gpu_s11.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-120} python3 -m pytest -q -x --backend triton \
  tests/test_triton_paths.py tests/test_cln.py -k "paths or schedule or large or causal" > "$OUT/test-triton-cln.log" 2>&1
echo "triton cLN tests rc=$?"; tail -3 "$OUT/test-triton-cln.log"
V="tickets,default,p look0,p tile4096,p nreg128,p bwd ept32,p bwd look1,p S2"
timeout -s KILL ${T_TUNE:-390} python3 -m bench.tune --backend triton --ops cln --parts shapes \
  --variants "${VARIANTS:-$V}" > "$OUT/tune-persist.log" 2>&1
echo "tune rc=$?"; grep -v 'persistent launches' "$OUT/tune-persist.log" | tail -200
