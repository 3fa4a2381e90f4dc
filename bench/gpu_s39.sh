#!/usr/bin/env bash
# Session 39: the forward's waits polled per thread (CLN_FWD_THREAD_SPIN, off by default): its
# GPU tests, its negative control (the PTX without the wait must change the output), then two
# rounds of bench.tune, forward and fwd+bwd, at the target shapes.
# Ran at 5e097b7 (with bench/gpu_env.sh of a later commit: gpu_neg_paths_tune), where the
# knob was off (adopted since: "fwd no thread spin" is the other side).
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s39.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_neg_paths_tune spin39 "thread_spin or several_groups" \
  "default,fwd thread spin" fwd,fwd_bwd bench.neg_thread_spin neg-thread-spin
