#!/usr/bin/env bash
# Session 48, the final code: the README's main job (make bench at the target shapes, every
# backend and peer, the plots).  Archived into $OUT/s48d-main.tgz.
#   OUT=out bash bench/gpu_s48d.sh
set -uo pipefail
source bench/gpu_env.sh
T_BENCH=330 gpu_main_job s48d-main
ls -la "$OUT"
