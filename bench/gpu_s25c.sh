#!/usr/bin/env bash
# Session 25: with the launches chained by PDL, the backward's variants nearest the default
# measured again on the fp32 fwd+bwd (two rounds of bench.tune): (4, 256, 16000) sits at 0.70.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s25c.sh
set -uo pipefail
source bench/gpu_env.sh
TUNE_DTYPE=fp32 T_TUNE=${T_TUNE:-120} gpu_tune_rounds bwd25c \
  "default,bwd tile4096,group256,colsum rows32,partials after publish,early partials" fwd_bwd
gpu_archive s25c
