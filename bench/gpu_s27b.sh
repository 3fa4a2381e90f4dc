#!/usr/bin/env bash
# Session 27: CLN_PDL_EARLY by direction, and the forward's stagger with it: two rounds of
# bench.tune (the first call, bench/gpu_s27.sh, had it in both directions only).
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s27b.sh
# Ran at ba25925, where the default had CLN_PDL_EARLY off: the logs' "default" rows are the
# variant "no early" here.
set -uo pipefail
source bench/gpu_env.sh
T_TUNE=${T_TUNE:-200} gpu_tune_rounds early27b \
  "no early,pdl early,pdl early fwd,pdl early bwd,pdl early st2,pdl early st4" fwd,fwd_bwd
