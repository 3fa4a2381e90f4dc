#!/usr/bin/env bash
# Session 48, second call: the tree's row counted before the suffix wait (CLN_BWD_TREE_EARLY,
# on) without the per-thread fences (CLN_BWD_TREE_FENCE, off): its GPU path tests, then two
# rounds of bench.tune's fwd+bwd at the target shapes against colsum's launches, the count
# after dx (with and without the fences), the fences, and the tree without its L2 discards.
# Archived into $OUT/s48b.tgz.
#   OUT=out bash bench/gpu_s48b.sh   (at 6f27408: the tree was removed after it; NOTES 49.1)
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
date +%T
T_TESTS=150 gpu_test_paths tree48b "tree or colsum or one_parameter or schedule_forward_backward"
date +%T
T_TUNE=200 gpu_tune_rounds tree48b "default,colsum launches,tree keep,tree late,tree late fenced,tree fenced" fwd_bwd
date +%T
gpu_archive s48b
ls -la "$OUT"
