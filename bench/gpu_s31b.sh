#!/usr/bin/env bash
# Session 31, after the final runs: the same-size copies of the cLN targets and the 2,000,000-frame
# sequence on the code of main (last run in session 22, before tiles by program id and the PDL
# chains), then the Triton backward's per-tile timeline on that code.
#   OUT=out bash bench/gpu_s31b.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_copy_long 200
timeout -s KILL 90 python3 -m bench.timeline_cln --direction bwd --levels 0 \
  > "$OUT/timeline-cln-bwd.log" 2>&1
echo "timeline rc=$?"; cat "$OUT/timeline-cln-bwd.log"
