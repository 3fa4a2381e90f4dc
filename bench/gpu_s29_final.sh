#!/usr/bin/env bash
# Session 29, the final calls on the final code (session 28's kernels: the fp32 backward's
# 4096-value tiles at C <= 128, CLN_BWD_TILE_32BIT; this session only fixed a compile test):
#   OUT=out bash bench/gpu_s29_final.sh all|main   (gpu_final_call in gpu_env.sh): s29-all.tgz, s29-main.tgz
set -uo pipefail
source bench/gpu_env.sh
gpu_final_call "${1:-all}" s29
