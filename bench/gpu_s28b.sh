#!/usr/bin/env bash
# Session 28: the fp32 backward's 4096-value tiles where rows stay >= 128 B (CLN_BWD_TILE_32BIT,
# C <= 128) against the 8192 before, and at 64 B rows too (C = 256); forward tiles of 4096 and
# 16384 values; the seed's variants forward and fwd+bwd; the Triton cLN tests on the GPU.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s28b.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-200} gpu_test_triton_cln
grep -E "FAILED|Error" "$OUT/test-triton.log" | head -20
TUNE_DTYPE=fp32 T_TUNE=${T_TUNE:-120} gpu_tune_rounds bwd28b "default,bwd32 tile8192,bwd32 rows64" fwd_bwd
T_TUNE=${T_TUNE:-120} gpu_tune_rounds fwd28b "default,fwd tile4096,fwd16 tile16k" fwd
SEED_MODES=fwd,fwd_bwd gpu_tune_seed seed28b
