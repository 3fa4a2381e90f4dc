#!/usr/bin/env bash
# Session 20, on the final code: the same-size copy of each cLN target and one sequence of
# 2,000,000 frames (64 channels, fp32; thousands of tiles, 15,625 rows of partials for the
# column sums), both backends, bench.tune --quick.
#   OUT=out bash bench/gpu_s20_long.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_copy_long 240
