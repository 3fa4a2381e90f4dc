#!/usr/bin/env bash
# Session 47, final code: make test-all on the H200 (the cuda_ext build first).
#   OUT=out bash bench/gpu_s47d.sh
set -uo pipefail
source bench/gpu_env.sh
NORMK_TEST_SECOND_GPU=0 gpu_tests_timed 360
