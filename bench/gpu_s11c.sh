#!/usr/bin/env bash
# Session 11, diagnostic call: where the cuda_ext streaming forward's prefix wait goes, by round
# (NORMK_CLN_DIAG 3 / 4: no wait for the first / last round's tiles only), beside the levels of
# NOTES 7.2 (bench/results/nvidia-h200-s11c-diag-stream.log; NOTES 14.5).
#   OUT=out bash bench/gpu_s11c.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_DIAG:-240} python3 -m bench.diag_cln_stream > "$OUT/diag-stream.log" 2>&1
echo "diag rc=$?"; cat "$OUT/diag-stream.log"
