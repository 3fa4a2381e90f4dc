#!/usr/bin/env bash
# Session 38: the prefix / suffix that reduce the 1-3 groups before a tile's own from their
# tile words (CLN_FWD_DIRECT_GROUPS, CLN_BWD_DIRECT_GROUPS, off by default): their GPU test,
# then two rounds of bench.tune, forward and fwd+bwd, at the target shapes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s38.sh
# Runs at e5409bf (git checkout e5409bf: its knobs, variants and this script as it was): the
# knobs were slower at every case and were removed (NOTES 39).
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-100} gpu_paths_then_tune direct38 "direct_groups" \
  "default,direct 1,direct 2,direct 3" fwd,fwd_bwd
