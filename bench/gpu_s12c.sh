#!/usr/bin/env bash
# Session 12: the cuda_ext streaming cLN kernels with the first round loaded alone
# (NORMK_CLN_STAGGER) and with stages refilled by the output warps (NORMK_CLN_REFILL), against
# the default, checked and timed by bench.tune; then the diagnostic levels
# (bench/results/nvidia-h200-s12c-*.log; NOTES 15).
#   OUT=out bash bench/gpu_s12c.sh
# Runs at commit ba40d24 only: its experiment knobs and tune variants were removed after it.
set -uo pipefail
source bench/gpu_env.sh
V="default,stagger,refill,refill stagger,refill S3,refill ppr8 S3"
timeout -s KILL ${T_TUNE:-280} python3 -m bench.tune --backend cuda_ext --ops cln \
  --parts shapes --variants "$V" > "$OUT/tune-refill.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-refill.log"
timeout -s KILL ${T_DIAG:-150} python3 -m bench.diag_cln_stream > "$OUT/diag-stream.log" 2>&1
echo "diag rc=$?"; cat "$OUT/diag-stream.log"
