#!/usr/bin/env bash
# Session 22: the Triton cLN forward's per-tile timeline (bench.timeline_cln), levels 0, 1, 3.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s22b.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_PROBE:-400} python3 -m bench.timeline_cln > "$OUT/timeline-cln.log" 2>&1
echo "timeline rc=$?"; cat "$OUT/timeline-cln.log"
