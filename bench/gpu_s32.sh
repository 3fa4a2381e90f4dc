#!/usr/bin/env bash
# Session 32: cLN programs of one warp (CLN_FWD_MIN_WARPS / CLN_BWD_MIN_WARPS = 1: each frame's
# sums over its channels within the warp) against the default's 2-16 warps, and their same-tile
# controls; two rounds of bench.tune, forward and fwd+bwd (bench.tune checks every variant
# against the float64 references before it times it).
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s32.sh
set -uo pipefail
source bench/gpu_env.sh
T_TUNE=${T_TUNE:-230} gpu_tune_rounds warps32 \
  "default,fwd16 1warp,fwd16 tile4k,fwd16 1warp row32,fwd16 tile4k row32,fwd16 row32,fwd32 1warp,bwd16 1warp,bwd32 1warp" \
  fwd,fwd_bwd
