#!/usr/bin/env bash
# Session 25: the fp32 backward's register cap at 64 values per thread (3 or 4 programs per SM
# with spills, against 2 uncapped), fp32 fwd+bwd, two rounds of bench.tune.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s25g.sh
set -uo pipefail
source bench/gpu_env.sh
TUNE_DTYPE=fp32 T_TUNE=${T_TUNE:-100} gpu_tune_rounds bwd25g "default,bwd nreg168,bwd nreg128" fwd_bwd
