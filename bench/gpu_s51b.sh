#!/usr/bin/env bash
# Ran at 9a19368 (with the sequence-group knob, reverted after: NOTES 52.3); at later commits
# -k "seq_group" selects nothing and only the binding-errors test runs.
# Session 51, the final code: the cuda_ext extension built, the new GPU tests (the sequence
# groups bitwise unchanged, seq_group < 0 refused, binding errors with numbers that raise
# instead of crashing; NOTES 52) into $OUT/test-s51b.log, then the README's `make test`
# (gpu_make_test) into $OUT/make-test.log.  Archived into $OUT/s51b.tgz.
#   OUT=out bash bench/gpu_s51b.sh
set -uo pipefail
source bench/gpu_env.sh
date +%T
PATHS_TEST=tests/test_cuda_ext_paths.py T_TESTS=120 gpu_test_paths s51b "seq_group or binding_errors"
date +%T
gpu_make_test 420
date +%T
gpu_archive s51b
