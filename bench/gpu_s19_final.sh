#!/usr/bin/env bash
# Session 19, the final call: the benchmark with every implementation on its own ptxas
# (bench/toolchain.py). The cLN benchmark with its peers (the README's cLN table), then the
# README's main job (make bench at the target shapes, every backend and peer, plots). Kernels as
# in session 18's final runs. Everything comes back in one archive (the call returns 8 files).
#   OUT=out bash bench/gpu_s19_final.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_final_bench s19-final
