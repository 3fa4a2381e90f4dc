#!/usr/bin/env bash
# Session 46: make test-all on the code of HEAD (the custom ops for torch.compile, the api's
# shared forward / backward bodies, tests/test_compile.py with Inductor on the GPU), the
# placement tests dry-run on this one GPU (NORMK_TEST_SECOND_GPU=0), in one archive.
#   OUT=out bash bench/gpu_s46d.sh
set -uo pipefail
source bench/gpu_env.sh
export NORMK_TEST_SECOND_GPU=0
gpu_tests_timed 450
grep -E "test_compile.py::" "$OUT/test-all.log" | sed 's/^\[gw[0-9]*\] *\[ *[0-9]*%\] *//' | sort | head -30
gpu_archive s46d
