#!/usr/bin/env bash
# Session 27, the final calls on the final code (Triton: CLN_PDL_EARLY; cuda_ext: CLN_PDL):
#   OUT=out bash bench/gpu_s27_final.sh all|main   (gpu_final_call in gpu_env.sh): s27-all.tgz, s27-main.tgz
set -uo pipefail
source bench/gpu_env.sh
gpu_final_call "${1:-all}" s27
