#!/usr/bin/env bash
# Session 12: the cuda_ext streaming cLN kernels with an L2 prefetch of the block's later
# tiles (NORMK_CLN_PREFETCH) and a grid balanced over the rounds (NORMK_CLN_GRID = -1),
# against the default, checked and timed by bench.tune; then the diagnostic levels with the
# prefetch (bench/results/nvidia-h200-s12-tune-prefetch.log, -s12-diag-stream.log; NOTES 15.1).
#   OUT=out bash bench/gpu_s12.sh
# Runs at commit 99f38a8 only: its experiment knobs and tune variants were removed after it.
set -uo pipefail
source bench/gpu_env.sh
V="default,pf1,pf2,pf3,pf4,gridbal,pf2 gridbal,pf2 ppr16 S2,pf2 ppr8 S2"
timeout -s KILL ${T_TUNE:-300} python3 -m bench.tune --backend cuda_ext --ops cln \
  --parts shapes,copy --variants "$V" > "$OUT/tune-prefetch.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-prefetch.log"
timeout -s KILL ${T_DIAG:-150} python3 -m bench.diag_cln_stream > "$OUT/diag-stream.log" 2>&1
echo "diag rc=$?"; cat "$OUT/diag-stream.log"
