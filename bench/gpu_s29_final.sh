#!/usr/bin/env bash
# Session 29, the final calls on the final code (the same kernels as session 28; the compile-test fix):
# C <= 128, CLN_BWD_TILE_32BIT):
#   OUT=out bash bench/gpu_s28_final.sh all|main   (gpu_final_call in gpu_env.sh): s29-all.tgz, s29-main.tgz
set -uo pipefail
source bench/gpu_env.sh
gpu_final_call "${1:-all}" s29
