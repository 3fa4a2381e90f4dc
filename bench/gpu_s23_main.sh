#!/usr/bin/env bash
# Session 23: the README's main job alone (make bench at the target shapes, every backend and
# peer, plots) on the final code, into one archive.
#   OUT=out bash bench/gpu_s23_main.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_BENCH:-260} make bench PY=python3 \
  BENCH_ARGS="--shapes targets --dtype fp32,bf16 --mode fwd,fwd_bwd --plot --cuda-graph all --out $OUT" \
  > "$OUT/bench.log" 2>&1
echo "make bench rc=$?"; grep -E "Copy bandwidth" "$OUT/nvidia-h200.md"; tail -4 "$OUT/bench.log"
tar czf /tmp/s23-main.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/s23-main.tgz "$OUT/"
