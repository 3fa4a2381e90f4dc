#!/usr/bin/env bash
# Session 32: every forward program prefetching a later tile of its sequence into the L2
# (CLN_FWD_PREFETCH, off by default): its GPU test first, then two rounds of bench.tune,
# forward and fwd+bwd.  (As run, the test was the same pytest call inline.)
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s32c.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_test_paths prefetch prefetch
T_TUNE=${T_TUNE:-200} gpu_tune_rounds prefetch32 \
  "default,prefetch 0.25,prefetch 0.5,prefetch 1,prefetch 2" fwd,fwd_bwd
