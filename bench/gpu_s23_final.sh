#!/usr/bin/env bash
# Session 23, the final calls on the final code:
#   OUT=out bash bench/gpu_s23_final.sh [TAG]   make test-all (xdist where .whl/ has it), then
#       the cLN benchmark with its peers (the README's cLN table), in one archive TAG.tgz
#       (s23-all: the kernels of d1e0826; s23e-all: with tiles by program id, 2nd run)
#   OUT=out bash bench/gpu_s23_main.sh          the README's main job (second call)
set -uo pipefail
source bench/gpu_env.sh
gpu_final_all "${1:-s23-all}"
