#!/usr/bin/env bash
# Session 32: the GPU tests of the L2-prefetching forward (after its test's shape was fixed)
# and of the one-warp programs, into $OUT/test-prefetch-b.log.  (As run, the same pytest call
# inline, and bench/gpu_env.sh also built the CUDA extension: SKIP_CUDA_BUILD was not set.)
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s32d.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=150 gpu_test_paths prefetch-b "prefetch or one-warp or min_warps"
