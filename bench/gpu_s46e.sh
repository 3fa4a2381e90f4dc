#!/usr/bin/env bash
# Session 46: a Conv-TasNet TCN training step with the eager cumsum cLN and with the Triton
# backend's, eager, under torch.compile and under torch.compile with CUDA graphs
# (python3 -m bench.model_tasnet), into $OUT/nvidia-h200-tasnet.md and its log; then the host
# time of one call (python3 -m bench.profile_overhead triton).
#   OUT=out bash bench/gpu_s46e.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 300 python3 -m bench.model_tasnet --backends triton --out "$OUT" \
  > "$OUT/tasnet.log" 2>&1
echo "tasnet rc=$?"; cat "$OUT/tasnet.log"
timeout -s KILL 100 python3 -m bench.profile_overhead triton > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; head -45 "$OUT/overhead.log"
