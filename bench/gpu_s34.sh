#!/usr/bin/env bash
# Session 34: fewer instructions per value in the backward (CLN_BWD_DX_FMA_16BIT,
# CLN_BWD_SHARE_16BIT, CLN_BWD_FAST_DIV) and the forward's divisions (CLN_FWD_FAST_DIV), all
# off by default: their GPU tests first, then two rounds of bench.tune, fwd+bwd for every
# variant, then the forward for the forward's.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s34.sh
set -uo pipefail
source bench/gpu_env.sh
date +%T
T_TESTS=${T_TESTS:-150} gpu_test_paths lean34 "lean_16bit or fast_div"
date +%T
T_TUNE=${T_TUNE:-230} gpu_tune_rounds bwdlean34 \
  "default,bwd16 dx fma,bwd16 share,bwd fast div,bwd lean,fwd fast div,bwd lean fwd fast div" \
  fwd_bwd
date +%T
T_TUNE=${T_TUNE_FWD:-60} gpu_tune_rounds fastdiv34 "default,fwd fast div" fwd
date +%T
