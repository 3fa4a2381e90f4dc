#!/usr/bin/env bash
# Session 19: where the cLN kernels' time goes on the code of main (the ablation tables of NOTES
# 16.3 and 19.1 were from sessions 13 and 16): the Triton forward's levels, then the backward
# alone, both backends (python3 -m bench.ablate_cln [--bwd]).
#   OUT=out bash bench/gpu_s19f.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL 150 python3 -m bench.ablate_cln > "$OUT/ablate-fwd.log" 2>&1
echo "ablate fwd rc=$?"; cat "$OUT/ablate-fwd.log"
timeout -s KILL 200 python3 -m bench.ablate_cln --bwd > "$OUT/ablate-bwd.log" 2>&1
echo "ablate bwd rc=$?"; cat "$OUT/ablate-bwd.log"
