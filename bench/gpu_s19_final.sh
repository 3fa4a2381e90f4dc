#!/usr/bin/env bash
# Session 19, the final call: the benchmark with every implementation on its own ptxas
# (bench/toolchain.py). The cLN benchmark with its peers (the README's cLN table), then the
# README's main job (make bench at the target shapes, every backend and peer, plots). Kernels as
# in session 18's final runs. Everything comes back in one archive (the call returns 8 files).
#   OUT=out bash bench/gpu_s19_final.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_bench_cln 200
timeout -s KILL ${T_BENCH:-330} make bench PY=python3 \
  BENCH_ARGS="--shapes targets --dtype fp32,bf16 --mode fwd,fwd_bwd --plot --cuda-graph all --out $OUT" \
  > "$OUT/bench.log" 2>&1
echo "make bench rc=$?"; grep -E "ptxas|Copy bandwidth" "$OUT/nvidia-h200.md"; tail -4 "$OUT/bench.log"
tar czf /tmp/s19-final.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/s19-final.tgz "$OUT/"
ls -la "$OUT"
