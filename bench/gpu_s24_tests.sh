#!/usr/bin/env bash
# Session 24: make test-all on the final code (the backward's stagger on), in test-all.log.
#   OUT=out bash bench/gpu_s24_tests.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-300} gpu_test_all
