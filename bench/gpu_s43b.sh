#!/usr/bin/env bash
# Session 43's second call (NOTES 44): the float32 forward no backward follows, 0.2-0.3 us short
# of 0.80 at the long-T shapes in the first call; two rounds of bench.tune of the fp32 forward:
# the default (paced at 6000 GB/s), paces of 5500 and 6500, and three older knobs on top of the
# pace (a 4096-value tile, the fast division, streaming output stores); archived into
# $OUT/s43b.tgz.
#   OUT=out bash bench/gpu_s43b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
T_TUNE=150 TUNE_DTYPE=fp32 gpu_tune_rounds alone43b \
  "default,alone pace 5500,alone pace 6500,fwd tile4096,fwd fast div,st cs" fwd
gpu_archive s43b
