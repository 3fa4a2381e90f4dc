#!/usr/bin/env bash
# Session 45's third call: the Gluon shared-memory-tile forward (bench/gluon_cln) with its warps
# split along the channels (one cross-warp reduction per statistics pass, fewer channels walked
# per thread), checked and timed against the Triton forward. Archived into $OUT/s45c.tgz. Ran
# at 17e1fec (the statistics in two passes over shared memory; gpu_s45d.sh is the next call).
#   OUT=out bash bench/gpu_s45c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
V="w4 f1 t1 c8,w4 f2 t1 c8,w8 f1 t1 c4,w2 f2 t1 c16,w4 f4 t1 c8,w8 f2 t1 c4"
V="$V,w4 f1 t1 c8 level1,w4 f1 t1 c8 level3,w4 f2 t1 c8 level1,w4 f2 t1 c8 level3"
gpu_gluon_run gluon45c "${GL_VARIANTS:-$V}"
gpu_archive s45c
