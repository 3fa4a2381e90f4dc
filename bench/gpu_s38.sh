#!/usr/bin/env bash
# Session 38: the prefix / suffix that reduce the 1-3 groups before a tile's own from their
# tile words (CLN_FWD_DIRECT_GROUPS, CLN_BWD_DIRECT_GROUPS, off by default): their GPU test,
# then two rounds of bench.tune, forward and fwd+bwd, at the target shapes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s38.sh
# Runs at e5409bf: the knobs were slower at every case and were removed (NOTES 39).
set -uo pipefail
source bench/gpu_env.sh
date +%T
T_TESTS=${T_TESTS:-100} gpu_test_paths direct38 "direct_groups"
date +%T
T_TUNE=${T_TUNE:-220} TUNE_ARGS=${TUNE_ARGS:---regs} gpu_tune_rounds direct38 \
  "default,direct 1,direct 2,direct 3" fwd,fwd_bwd
date +%T
ls -la "$OUT"
