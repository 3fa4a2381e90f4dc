#!/usr/bin/env bash
# Session 48, the cLN backward's own column sums (CLN_BWD_TREE, on): the Triton cLN tests
# (every knob path, the tree's fan-in 2 and colsum's launches among them; the negative
# controls), then two rounds of bench.tune's fwd+bwd at the target shapes: the tree with its
# L2 discards (the default), colsum's two launches (before), the tree without the discards,
# and with 128 values a thread per node load.  Archived into $OUT/s48.tgz.
#   OUT=out bash bench/gpu_s48.sh   (at 6f27408: the tree was removed after it; NOTES 49.1)
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
date +%T
T_TESTS=200 gpu_test_triton_cln
grep -E "FAILED|ERROR" "$OUT/test-triton.log" | head -20
date +%T
T_TUNE=160 gpu_tune_rounds tree48 "default,colsum launches,tree keep,tree v128" fwd_bwd
date +%T
gpu_archive s48
ls -la "$OUT"
