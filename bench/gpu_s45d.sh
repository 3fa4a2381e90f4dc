#!/usr/bin/env bash
# Session 45's fourth call: the Gluon shared-memory-tile forward (bench/gluon_cln) with its
# statistics in one pass over shared memory (per-chunk mean and M2 in registers, merged by
# Chan's rule) and its output as two FMAs, checked and timed against the Triton forward.
# Archived into $OUT/s45d.tgz.
#   OUT=out bash bench/gpu_s45d.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
V="w4 f1 t1 c8,w4 f2 t1 c8,w2 f2 t1 c16,w4 f4 t1 c8,w4 f2 t1 c16,w2 f1 t1 c16"
V="$V,w4 f2 t1 c8 level1,w4 f2 t1 c8 level3,w2 f2 t1 c16 level1,w4 f4 t1 c8 level3"
gpu_gluon_run gluon45d "${GL_VARIANTS:-$V}"
gpu_archive s45d
