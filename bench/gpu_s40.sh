#!/usr/bin/env bash
# Session 40: cuda_ext's prefix waits polled per lane (CLN_PREFIX_SPIN = 1: every not-ready word
# of a lane reloaded together, no sleep) against one word at a time 20 ns apart (0): the
# negative control (no wait must change the outputs), the GPU test that the two give the same
# bits, then two rounds of bench.tune (cuda_ext), forward and fwd+bwd, at the target shapes.
#   OUT=out bash bench/gpu_s40.sh
# Ran at the commit that added it: lane spin adopted (NOTES 41); the bf16 cases of its test
# failed there on the harness's float32 dy (fixed in tests/harness.py after).
set -uo pipefail
source bench/gpu_env.sh
PATHS_TEST=tests/test_cuda_ext_paths.py TUNE_BACKEND=cuda_ext TUNE_ARGS=" " \
  gpu_neg_paths_tune spin40 "prefix_spin" "lane spin,word spin" fwd,fwd_bwd \
  bench.neg_prefix_spin neg-prefix-spin
