#!/usr/bin/env bash
# Session 40's final calls on the final code (cuda_ext CLN_PREFIX_SPIN = 1), each within the 600-s
# limit, on one warm machine:
#   OUT=out bash bench/gpu_s40_final.sh tests   # make test-all, the whole suite, 4 xdist workers
#   OUT=out bash bench/gpu_s40_final.sh bench   # the cLN benchmark with its peers (the README's
#                                               # cLN table), then the README's main job
#                                               # (make bench, every backend and peer, plots)
set -uo pipefail
source bench/gpu_env.sh
gpu_final_tests_bench "${1:-}" s40
