#!/usr/bin/env bash
# Session 45's last call: the Gluon prototype (bench/gluon_cln) after its review clean-up (the
# per-frame vectors in one 1-D layout, no second one to convert through; the same SASS count
# offline), checked against the float64 reference and timed against the Triton forward in
# three of its configurations. Archived into $OUT/s45h.tgz.
#   OUT=out bash bench/gpu_s45h.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
gpu_gluon_run gluon45h "${GL_VARIANTS:-w4 f2 t1 c8 tspin st6,w2 f2 t1 c16,w4 f2 t1 c8 level2}"
gpu_archive s45h
