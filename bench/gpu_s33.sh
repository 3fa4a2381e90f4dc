#!/usr/bin/env bash
# Session 33: the waiting programs' polls (CLN_SPIN_NEAREST, CLN_SPIN_SLEEP_NS, both off by
# default): their GPU tests first, then two rounds of bench.tune, forward and fwd+bwd.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s33.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_test_paths spin spin
T_TUNE=${T_TUNE:-280} gpu_tune_rounds spin33 \
  "default,spin nearest,spin sleep 200,spin sleep 500,spin nearest sleep 200" fwd,fwd_bwd
