#!/usr/bin/env bash
# Session 23: where a tile's time goes in the Triton cLN backward (per-tile %globaltimer stamps,
# _DIAG_TIMELINE_BWD): the kernel, without the suffix wait, and the load-store skeleton.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s23c.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TL:-400} python3 -m bench.timeline_cln --direction bwd --levels ${LEVELS:-0,1,3} \
  > "$OUT/timeline-cln-bwd.log" 2>&1
echo "timeline rc=$?"; cat "$OUT/timeline-cln-bwd.log"
