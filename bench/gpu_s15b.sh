#!/usr/bin/env bash
# Session 15: the tile skeleton (bench/tile_skeleton.py) with the rows moved by the bulk-copy
# unit (hold_bulk), against the register / shared-memory holds of session 6 (NOTES 9.5), in one
# call: is there a data movement of the cLN tile pattern at or above 0.85-0.90 of the copy?
#   OUT=out bash bench/gpu_s15b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_SKEL:-300} python3 -m bench.tile_skeleton --modes stream,hold,hold_bulk \
  --threads 32,128,256 --ppr 4,8,16,32 > "$OUT/tile-skeleton-bulk.log" 2>&1
echo "skeleton rc=$?"; cat "$OUT/tile-skeleton-bulk.log"
