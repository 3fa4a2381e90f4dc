#!/usr/bin/env bash
# Session 18: the README's main job (bench/gpu_s15_main.sh: make bench, every backend and peer at
# the target shapes, plots) on the code of main, which is session 17's final code (the Triton
# bf16 cLN backward's partials moved since session 16's main job; RMSNorm unchanged), to refresh
# bench/results/nvidia-h200.{md,json,png}.
#   OUT=out bash bench/gpu_s18_main.sh
set -uo pipefail
T_BENCH=${T_BENCH:-450} bash bench/gpu_s15_main.sh
