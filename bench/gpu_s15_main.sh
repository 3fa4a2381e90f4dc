#!/usr/bin/env bash
# Session 15: the README's main job on the GPU (make bench with its defaults: every backend and
# peer at the target shapes, fp32 + bf16, plots), to refresh bench/results/nvidia-h200.{md,json,png}
# on the code of main (the tests ran in the call before: bench/gpu_s14_final.sh tests).
#   OUT=out bash bench/gpu_s15_main.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_BENCH:-420} make bench PY=python3 \
  BENCH_ARGS="--shapes targets --dtype fp32,bf16 --mode fwd,fwd_bwd --plot --cuda-graph all --out $OUT" \
  > "$OUT/bench.log" 2>&1
echo "make bench rc=$?"; tail -8 "$OUT/bench.log"
