#!/usr/bin/env bash
# Session 23: the README's main job alone (make bench at the target shapes, every backend and
# peer, plots) on the final code, into one archive.
#   OUT=out bash bench/gpu_s23_main.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_main_job s23-main
