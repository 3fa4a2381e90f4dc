#!/usr/bin/env bash
# GPU call: the load-store skeleton of a single-pass cLN tile, outside both backends
# (bench/tile_skeleton.py: CuPy/NVRTC only, no extension build, no wheels needed).
#   bash bench/gpu_s6_skeleton.sh
#   SKEL_ARGS="--threads 256,512 --ppr 8,16,32" SKEL_TAG=-threads bash bench/gpu_s6_skeleton.sh
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
timeout -s KILL ${T_SKEL:-240} python3 -m bench.tile_skeleton ${SKEL_ARGS:-} 2>&1 \
  | tee "$OUT/tile-skeleton${SKEL_TAG:-}.log"
