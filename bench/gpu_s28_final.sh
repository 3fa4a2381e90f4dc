#!/usr/bin/env bash
# Session 28, the final calls on the final code (Triton: the fp32 backward's 4096-value tiles at
# C <= 128, CLN_BWD_TILE_32BIT):
#   OUT=out bash bench/gpu_s28_final.sh all|main   (gpu_final_call in gpu_env.sh): s28-all.tgz, s28-main.tgz
set -uo pipefail
source bench/gpu_env.sh
gpu_final_call "${1:-all}" s28
