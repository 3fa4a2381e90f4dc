#!/usr/bin/env bash
# Session 44's last two calls on the final code (CLN_FWD_ALONE_AFFINE_EARLY on), on one warm
# machine: $1 = tests (make test-all, 4 xdist workers) or bench (the cLN benchmark with its
# peers, the README's cLN table, then the README's main job).
#   OUT=out bash bench/gpu_s44_final.sh tests|bench
set -uo pipefail
source bench/gpu_env.sh
gpu_final_tests_bench "$1" s44
