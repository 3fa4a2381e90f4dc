#!/usr/bin/env bash
# Session 17, last call: the final benchmark's one outlier again (Triton fp32 (2, 128, 64000)
# fwd+bwd, 135.9 us there against 124.7-127.5 us in four bench.tune runs of the same code):
# the benchmark's own command for that shape (Triton only: no cuda_ext build), twice.
#   OUT=out bash bench/gpu_s17e.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for round in 1 2; do
  timeout -s KILL ${T_BENCH:-70} python3 -m bench --op cln --backend triton \
    --mode fwd,fwd_bwd --dtype fp32 --shapes 2x128x64000 --cuda-graph all --budget 0.15 \
    --out "$OUT" --tag outlier-$round > "$OUT/bench-outlier-$round.log" 2>&1
  echo "round $round rc=$?"; grep -E "^\| 2x128x64000" "$OUT/nvidia-h200-outlier-$round.md"
done
