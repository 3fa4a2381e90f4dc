#!/usr/bin/env bash
# Session 38: the prefix / suffix in one wait and one fold (CLN_FWD_PREFIX_MERGED,
# CLN_BWD_SUFFIX_MERGED, off by default): their GPU tests, then two rounds of bench.tune,
# forward and fwd+bwd, at the target shapes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s38b.sh
set -uo pipefail
source bench/gpu_env.sh
date +%T
T_TESTS=${T_TESTS:-120} gpu_test_paths merged38 "merged"
date +%T
T_TUNE=${T_TUNE:-220} TUNE_ARGS=${TUNE_ARGS:---regs} gpu_tune_rounds merged38 \
  "default,merged,fwd merged,bwd merged" fwd,fwd_bwd
date +%T
ls -la "$OUT"
