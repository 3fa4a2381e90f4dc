#!/usr/bin/env bash
# Session 45's fifth call: the Gluon shared-memory-tile forward (bench/gluon_cln) with gamma /
# beta staged in shared memory while the tile loads (the output loop had read them from global
# memory, one L2 round trip per chunk), checked and timed against the Triton forward, with the
# ablation levels of its best configuration. Archived into $OUT/s45e.tgz.
#   OUT=out bash bench/gpu_s45e.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
V="w4 f1 t1 c8,w4 f2 t1 c8,w2 f2 t1 c16,w4 f2 t1 c16"
V="$V,w4 f2 t1 c8 level1,w4 f2 t1 c8 level2,w4 f2 t1 c8 level3"
gpu_gluon_run gluon45e "${GL_VARIANTS:-$V}"
gpu_archive s45e
