#!/usr/bin/env bash
# Session 25, the final calls on the final code (the launches chained by PDL):
#   OUT=out bash bench/gpu_s25_final.sh all|main   (gpu_final_call in gpu_env.sh): s25-all.tgz, s25-main.tgz
set -uo pipefail
source bench/gpu_env.sh
gpu_final_call "${1:-all}" s25
