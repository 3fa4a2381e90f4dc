#!/usr/bin/env bash
# Session 43's first call (NOTES 44), on the code whose cLN forward, when no backward follows
# (common.cln under torch.no_grad), writes no per-frame statistics and paces 4-byte inputs
# (CLN_FWD_ALONE_PACE_GBPS_32BIT = 6000): make test-all (4 xdist workers), then two rounds of
# bench.tune of the Triton forward at the target shapes, fp32 and bf16: the default, the forward
# as before (statistics written, the stagger: "stats always"), and the new forward unpaced
# ("alone unpaced"); everything archived into $OUT/s43.tgz.
#   OUT=out bash bench/gpu_s43.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_tests_timed 300
T_TUNE=110 TUNE_DTYPE=fp32,bf16 gpu_tune_rounds alone43 \
  "default,stats always,alone unpaced,alone pace 5000" fwd
gpu_archive s43
