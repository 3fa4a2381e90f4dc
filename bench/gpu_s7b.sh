#!/usr/bin/env bash
# Session 7, second GPU call: where the hold forward's time goes.  bench.diag_cln_stream times
# the hold kernel (automatic and forced PPR) and the streaming kernel at the NORMK_CLN_DIAG
# levels, then bench.tile_skeleton gives the hold pattern's own load-store figures at the
# hold kernel's 256 threads.
#   OUT=out bash bench/gpu_s7b.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_DIAG:-300} python3 -m bench.diag_cln_stream > "$OUT/diag-hold.log" 2>&1
cat "$OUT/diag-hold.log"
timeout -s KILL 120 python3 -m bench.tile_skeleton --modes hold,hold_async --threads 256 \
  --ppr 8,16,32 > "$OUT/tile-skeleton-256.log" 2>&1; cat "$OUT/tile-skeleton-256.log"
