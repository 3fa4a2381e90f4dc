#!/usr/bin/env bash
# Session 23: the Triton forward's earlier launch variants again, now that the first wave is
# staggered (CLN_FWD_STAGGER_NS, session 22): tile size, register caps, warps, groups, runs.
# bench.tune, forward only, two rounds in separate processes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s23b.sh
set -uo pipefail
source bench/gpu_env.sh
V="default,fwd16 tile16k,pairs nreg144/184,pairs no cap,fwd16 ept64 nreg128,group256,run4"
gpu_tune_rounds fwd "$V,fwd ept128 nreg200,fwd rows128 ept128,no stagger" fwd
