#!/usr/bin/env bash
# Session 45's second call: the shared-memory-tile cLN forward prototype in Gluon
# (bench/gluon_cln/cln_smem.py), checked against the float64 reference and timed against the
# Triton forward (both under torch.no_grad) at the cLN target shapes, fp32 then bf16.
# Archived into $OUT/s45b.tgz.
#   OUT=out bash bench/gpu_s45b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
gpu_gluon_run gluon45 "${GL_VARIANTS:-default,level1 no-prefix,level3 load-store,nw1,no stagger}"
gpu_archive s45b
