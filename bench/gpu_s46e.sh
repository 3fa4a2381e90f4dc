#!/usr/bin/env bash
# Session 46: a Conv-TasNet TCN training step with the eager cumsum cLN and with the Triton
# backend's, eager and under torch.compile (python3 -m bench.model_tasnet), into
# $OUT/nvidia-h200-tasnet.md and its log.
#   OUT=out bash bench/gpu_s46e.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 420 python3 -m bench.model_tasnet --backends triton --out "$OUT" \
  > "$OUT/tasnet.log" 2>&1
echo "tasnet rc=$?"; cat "$OUT/tasnet.log"
