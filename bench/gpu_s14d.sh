#!/usr/bin/env bash
# Session 14, last call: the Triton cLN tests on the GPU on the final code (the backward with
# the tuple sums, the forward as before).
#   OUT=out bash bench/gpu_s14d.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-240} python3 -m pytest -q -p no:cacheprovider tests \
  -k "(triton or pairs or schedule) and not rmsnorm" > "$OUT/test-triton-cln.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton-cln.log"
