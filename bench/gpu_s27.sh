#!/usr/bin/env bash
# Session 27: CLN_PDL_EARLY, the zero kernel letting the cLN kernel launch before it waits (the
# cLN kernel waiting before its first load): the Triton cLN tests on the GPU (the PDL test runs
# both orders), then two rounds of bench.tune against the default and the seed.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s27.sh
# Ran at af178ad, where the default had CLN_PDL_EARLY off: the logs' "default" rows are the
# variant "no early" here (the default has it for the forward since fe23f00).
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-200} gpu_test_triton_cln
grep -E "FAILED|Error" "$OUT/test-triton.log" | head -20
T_TUNE=${T_TUNE:-120} gpu_tune_rounds early27 "no early,pdl early" fwd,fwd_bwd
gpu_tune_seed seed27
