#!/usr/bin/env bash
# Session 16, last call: the README's main job (make bench, every backend and peer at the target
# shapes) on the final code (the Triton RMSNorm dw back on torch.sum), then the Triton RMSNorm
# GPU tests of that code.
#   OUT=out bash bench/gpu_s16_main.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_BENCH:-300} make bench PY=python3 \
  BENCH_ARGS="--shapes targets --dtype fp32,bf16 --mode fwd,fwd_bwd --plot --cuda-graph all --out $OUT" \
  > "$OUT/bench.log" 2>&1
echo "make bench rc=$?"; tail -3 "$OUT/bench.log"
timeout -s KILL ${T_TESTS:-60} python3 -m pytest -q -p no:cacheprovider tests/test_rmsnorm.py \
  -k triton > "$OUT/test-triton-rms.log" 2>&1
echo "tests rc=$?"; tail -2 "$OUT/test-triton-rms.log"
