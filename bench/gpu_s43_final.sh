#!/usr/bin/env bash
# Session 43's final call on the final code (the cLN forward no backward follows writes no
# per-frame statistics; Triton paces its float32 at 6000 GB/s), within the 600-s limit: the cLN
# benchmark with its peers (the README's cLN table), then the README's main job (make bench,
# every backend and peer, plots). make test-all ran in the first call (bench/gpu_s43.sh, at
# e6c5217: the same kernels and defaults).
#   OUT=out bash bench/gpu_s43_final.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_final_tests_bench bench s43
