#!/usr/bin/env bash
# Session 32: the GPU tests of the L2-prefetching forward (after its test's shape was fixed)
# and of the one-warp programs, into $OUT/test-prefetch-b.log.  (As run, bench/gpu_env.sh also
# built the CUDA extension: SKIP_CUDA_BUILD was not set.)
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s32d.sh
set -uo pipefail
source bench/gpu_env.sh >/dev/null 2>&1
timeout -s KILL 150 python3 -m pytest -q tests/test_triton_paths.py \
  -k "prefetch or one-warp or min_warps" > "$OUT/test-prefetch-b.log" 2>&1
echo rc=$?; tail -3 "$OUT/test-prefetch-b.log"
