#!/usr/bin/env bash
# Session 43's last call (NOTES 44.4), measurement only: the float32 forward no backward follows
# (paced at 6000 GB/s) with older knobs on top, each measured before without the pace: gamma /
# beta read before the prefix wait, evict-first tile loads, 128 values per thread at 200
# registers, the unmerged prefix, the polls from one thread; two rounds of bench.tune, archived
# into $OUT/s43c.tgz.
#   OUT=out bash bench/gpu_s43c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
T_TUNE=100 TUNE_DTYPE=fp32 gpu_tune_rounds alone43c \
  "default,fwd affine early,ld evict_first,fwd ept128 nreg200,fwd unmerged,fwd no thread spin" fwd
gpu_archive s43c
