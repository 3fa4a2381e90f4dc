#!/usr/bin/env bash
# Session 23, the final calls on the final code (the kernels of d1e0826):
#   OUT=out bash bench/gpu_s23_final.sh all     make test-all (xdist where .whl/ has it), then
#       the cLN benchmark with its peers (the README's cLN table), one archive
#   OUT=out bash bench/gpu_s23_main.sh          the README's main job (second call)
set -uo pipefail
source bench/gpu_env.sh
gpu_final_all s23-all
