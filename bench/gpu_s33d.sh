#!/usr/bin/env bash
# Session 33: fewer instructions per value (CLN_FWD_EVEN, CLN_FWD_OUT_FMA_16BIT, CLN_PACK_ASM,
# all off by default): their GPU tests first, then two rounds of bench.tune, forward and
# fwd+bwd.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s33d.sh
# (As run at ac6971d: the tests' "lean" schedule is now "not-lean" (the knobs are on by
# default), and the "shifted" tests went with CLN_FWD_SHIFTED_SCAN; the call's tests were
# killed at the 120-s limit after 5 passed.)
set -uo pipefail
source bench/gpu_env.sh
gpu_test_paths lean "lean or even_and or shifted"
T_TUNE=${T_TUNE:-240} gpu_tune_rounds lean33 \
  "default,fwd even,fwd16 out fma,pack asm,lean" fwd,fwd_bwd
