#!/usr/bin/env bash
# Session 47, final code: the host time of each call and inside one step, Triton (launches
# through JITFunction.run and direct) and cuda_ext (python3 -m bench.profile_overhead); the
# Conv-TasNet training step with both backends eager, compiled and compiled with CUDA graphs
# (python3 -m bench.model_tasnet), and eagerly with Triton's launches through JITFunction.run
# (NORMK_TRITON_DIRECT_LAUNCH=0) in the same call.
#   OUT=out bash bench/gpu_s47e.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL 150 python3 -m bench.profile_overhead triton cuda_ext > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; cat "$OUT/overhead.log"
timeout -s KILL 300 python3 -m bench.model_tasnet --backends triton,cuda_ext --out "$OUT" \
  > "$OUT/tasnet.log" 2>&1
echo "tasnet rc=$?"; tail -14 "$OUT/tasnet.log"
NORMK_TRITON_DIRECT_LAUNCH=0 timeout -s KILL 100 python3 -m bench.model_tasnet --backends triton \
  --modes eager > "$OUT/tasnet-eager-run.log" 2>&1
echo "tasnet JITFunction.run rc=$?"; tail -4 "$OUT/tasnet-eager-run.log"
