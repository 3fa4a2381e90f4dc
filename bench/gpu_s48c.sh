#!/usr/bin/env bash
# Session 48, the final code (the kernels of d06b0ef: session 47's, the tree of 6f27408
# removed): make test-all on the H200, 8 pytest-xdist processes (the cuda_ext build first),
# the placement tests dry-run on this one GPU.  Archived into $OUT/s48c.tgz.
#   OUT=out bash bench/gpu_s48c.sh
set -uo pipefail
source bench/gpu_env.sh
NORMK_TEST_SECOND_GPU=0 XDIST=8 gpu_tests_call s48c 440
ls -la "$OUT"
