#!/usr/bin/env bash
# Session 50, after the review: the paced forward's start index is always the program id (it
# equalled j * B + b with all sequences interleaved).  The GPU tests of the pace and the
# sequence groups (bitwise the unpaced / interleaved outputs) into $OUT/test-pace50h.log, then one
# round of bench.tune's fp32 forward alone (default, "paced seqg all") into
# $OUT/tune-pace50h-1.log; archived into $OUT/s50h.tgz.
#   OUT=out bash bench/gpu_s50h.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
T_TESTS=100 gpu_test_paths pace50h "pace or seq_group or seq-groups"
ROUNDS=1 TUNE_DTYPE=fp32 T_TUNE=70 gpu_tune_rounds pace50h "default,paced seqg all" fwd
gpu_archive s50h
