#!/usr/bin/env bash
# Session 24, the final call on the final code (the backward's stagger on): the cLN benchmark
# with its peers (the README's cLN table), then the README's main job (make bench at the
# target shapes, every backend and peer, plots), in one archive TAG.tgz.
#   OUT=out bash bench/gpu_s24_final.sh [TAG]
set -uo pipefail
source bench/gpu_env.sh
gpu_final_bench "${1:-s24f}"
