#!/usr/bin/env bash
# Session 38: the prefix / suffix in one wait and one fold (CLN_FWD_PREFIX_MERGED,
# CLN_BWD_SUFFIX_MERGED, off by default): their GPU tests, then two rounds of bench.tune,
# forward and fwd+bwd, at the target shapes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s38b.sh
# Runs at d1d0f23 (its knobs and variants): CLN_FWD_PREFIX_MERGED was adopted (on by default
# since), CLN_BWD_SUFFIX_MERGED removed (NOTES 39).
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-120} gpu_paths_then_tune merged38 "merged" \
  "default,merged,fwd merged,bwd merged" fwd,fwd_bwd
