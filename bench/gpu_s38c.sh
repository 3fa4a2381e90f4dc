#!/usr/bin/env bash
# Session 38: the merged prefix's readiness test inside its fold (CLN_FWD_FOLD_READY, on for
# this call): the Triton cLN tests on the GPU, two rounds of bench.tune against it off, then
# the cLN benchmark with its peers on this code (the README's cLN table if it is adopted).
#   OUT=out bash bench/gpu_s38c.sh
# Runs at 7c849b0: the knob lost (forward 0.6-1.1 us slower at the long-T shapes) and was
# removed (NOTES 39.3b).
set -uo pipefail
source bench/gpu_env.sh
date +%T
T_TESTS=${T_TESTS:-200} gpu_test_triton_cln
date +%T
T_TUNE=${T_TUNE:-100} gpu_tune_rounds foldready38 "default,fwd fold unready" fwd,fwd_bwd
date +%T
gpu_bench_cln 200
gpu_archive s38c-fold-ready
ls -la "$OUT"
