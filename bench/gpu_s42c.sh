#!/usr/bin/env bash
# Session 42's third call (NOTES 43.3), on the code that paces 4-byte forwards by default
# (CLN_FWD_PACE_GBPS_32BIT = 6000): make test-all (4 xdist workers), then two rounds of
# bench.tune of the forward and fwd+bwd at the target shapes, fp32 and bf16: the default, the
# default before (no pace: the 3-us stagger) and paces of 5000 and 7000 GB/s for every dtype;
# everything archived into $OUT/s42c.tgz.
#   OUT=out bash bench/gpu_s42c.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_tests_timed 330
T_TUNE=170 TUNE_DTYPE=fp32,bf16 gpu_tune_rounds pace42c "default,no pace,pace 5000,pace 7000" \
  fwd,fwd_bwd
gpu_archive s42c
