#!/usr/bin/env bash
# Session 12: A/B of the output warps' refill with 3-4 stages against the default and against
# 3 stages without it, the sweep run twice in one call (bench/results/nvidia-h200-s12d-*.log;
# NOTES 15).
#   OUT=out bash bench/gpu_s12d.sh
# Runs at commit ba40d24 only: its experiment knobs and tune variants were removed after it.
set -uo pipefail
source bench/gpu_env.sh
for r in 1 2; do
  timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend cuda_ext --ops cln \
    --parts shapes --variants "default,S3,refill S3,refill S4" > "$OUT/ab-refill-$r.log" 2>&1
  echo "round $r rc=$?"; cat "$OUT/ab-refill-$r.log"
done
