#!/usr/bin/env bash
# Session 24: the backward's first-wave stagger, longer spreads (4 us gained at every fwd+bwd
# case by program id in gpu_s24.sh), two rounds of bench.tune on fwd+bwd in one call.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s24b.sh
set -uo pipefail
source bench/gpu_env.sh
T_TUNE=${T_TUNE:-150} gpu_tune_rounds bwd24b \
  "default,stagger bwd 4us,stagger bwd 6us,stagger bwd 8us,stagger bwd 12us" fwd_bwd
