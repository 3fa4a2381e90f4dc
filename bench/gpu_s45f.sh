#!/usr/bin/env bash
# Session 45's sixth call: does the prefix wait of the Gluon shared-memory-tile forward
# (bench/gluon_cln) grow with the tiles resident per SM? Its best configuration at the long-T
# shapes with the programs per SM capped at 3 / 4 / 6 / 8 by padded shared memory, each with
# and without its prefix wait (level 1). Archived into $OUT/s45f.tgz.
#   OUT=out bash bench/gpu_s45f.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
V="w4 f2 t1 c8,w4 f2 t1 c8 level1"
for n in 3 4 6 8; do V="$V,w4 f2 t1 c8 sm$n,w4 f2 t1 c8 sm$n level1"; done
gpu_gluon_run gluon45f "${GL_VARIANTS:-$V}" 4x256x16000,2x128x64000
gpu_archive s45f
