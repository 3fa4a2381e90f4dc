#!/usr/bin/env bash
# Session 24: with the backward's stagger on (CLN_BWD_STAGGER_NS = 4000): the Triton cLN tests
# on the GPU, then two rounds of bench.tune on fwd+bwd: the stagger's neighbours and the
# backward's tile variants measured again.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s24c.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_test_triton_cln
T_TUNE=${T_TUNE:-120} gpu_tune_rounds bwd24c \
  "default,no bwd stagger,stagger bwd 3us,stagger bwd 5us,bwd tile4096,bwd ept32,bwd16 tile8192" \
  fwd_bwd
