#!/usr/bin/env bash
# Session 45's seventh call: the Gluon shared-memory-tile forward (bench/gluon_cln) with the
# Triton forward's wait refinements (the merged prefix: one wait and one fold for the earlier
# groups' and the own group's words; each thread polling only its own words), checked and timed
# against the Triton forward. Archived into $OUT/s45g.tgz.
#   OUT=out bash bench/gpu_s45g.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
V="w4 f2 t1 c8,w4 f2 t1 c8 tspin,w2 f2 t1 c16,w2 f2 t1 c16 tspin,w4 f1 t1 c8,w4 f1 t1 c8 tspin"
V="$V,w4 f2 t1 c8 tspin st6,w4 f2 t1 c8 level1"
gpu_gluon_run gluon45g "${GL_VARIANTS:-$V}"
gpu_archive s45g
