#!/usr/bin/env bash
# Session 25: the seed's slowdown by program id against the launch before it
# (bench/probe_seed_pid.py: back-to-back, after a sleep kernel, after a copy), twice; the
# second call (s25f) with the program id staggered too.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s25e.sh
set -uo pipefail
source bench/gpu_env.sh
for r in 1 2; do
  timeout -s KILL 90 python3 -m bench.probe_seed_pid > "$OUT/probe-seed-pid-$r.log" 2>&1
  echo "round $r rc=$?"; cat "$OUT/probe-seed-pid-$r.log"
done
