#!/usr/bin/env bash
# Session 13: Triton cLN with 16-bit tiles held as packed words (CLN_FWD_PAIRS /
# CLN_BWD_PAIRS) against the float32 register tiles, and its register caps; the fp32 forward
# at 128 values per thread capped at 200 registers.  The Triton cLN tests on the GPU first
# (bench/results/nvidia-h200-s13-*.log; NOTES 16).
#   OUT=out bash bench/gpu_s13.sh
set -uo pipefail
export SKIP_CUDA_BUILD=1
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-150} python3 -m pytest -q -x tests/test_triton_paths.py \
  tests/test_cln.py -k "triton or pairs or schedule" > "$OUT/test-triton-cln.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton-cln.log"
timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend triton --ops cln --dtype bf16 \
  --parts shapes,copy --variants "default,no pairs,pairs nreg144/184,pairs no cap" \
  > "$OUT/tune-pairs.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-pairs.log"
timeout -s KILL ${T_TUNE32:-100} python3 -m bench.tune --backend triton --ops cln --dtype fp32 \
  --parts shapes --variants "default,fwd ept128 nreg200" > "$OUT/tune-fp32-ept128.log" 2>&1
echo "tune fp32 rc=$?"; cat "$OUT/tune-fp32-ept128.log"
