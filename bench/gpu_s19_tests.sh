#!/usr/bin/env bash
# Session 19: make test-all on the final code of the session (kernels as in session 18's final
# runs; the benchmark's per-implementation ptxas and the probes are new).
#   OUT=out bash bench/gpu_s19_tests.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-360} gpu_test_all
