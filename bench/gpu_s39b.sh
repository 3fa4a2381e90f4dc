#!/usr/bin/env bash
# Session 39: the backward's suffix waits polled per thread (CLN_BWD_THREAD_SPIN, off by
# default) and the forward's (CLN_FWD_THREAD_SPIN, on since 5e097b7's A/B, bench/gpu_s39.sh):
# both negative controls (the PTX without the wait must change the outputs), their GPU tests,
# then two rounds of bench.tune, forward and fwd+bwd, at the target shapes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s39b.sh
# Runs at b5dadfd (its knob, tests and negative control; with bench/gpu_env.sh of a later
# commit: gpu_neg_paths_tune): CLN_BWD_THREAD_SPIN lost (fwd+bwd
# +0.3-7.3 us) and was removed (NOTES 40).
set -uo pipefail
source bench/gpu_env.sh
gpu_neg_paths_tune spin39b "thread_spin" \
  "default,fwd no thread spin,bwd thread spin" fwd,fwd_bwd bench.neg_thread_spin neg-thread-spin-b
