#!/usr/bin/env bash
# Session 28: the affine parameters read before the prefix / suffix wait (CLN_FWD_AFFINE_EARLY,
# CLN_BWD_AFFINE_EARLY): the Triton cLN tests on the GPU (test_affine_early_leaves_the_output_
# unchanged among them), then two rounds of bench.tune against the reads after the wait, with
# the fp32 backward's 4096-value tiles beside them, and the seed's variants.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s28.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-200} gpu_test_triton_cln
grep -E "FAILED|Error" "$OUT/test-triton.log" | head -20
T_TUNE=${T_TUNE:-150} gpu_tune_rounds affine28 \
  "affine late,affine early,fwd affine early,bwd affine early,bwd tile4096" fwd,fwd_bwd
gpu_tune_seed seed28
