#!/usr/bin/env bash
# Session 22: what the per-call workspace zeroing costs the Triton cLN kernels (bench.probe_scratch).
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s22.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_PROBE:-400} python3 -m bench.probe_scratch > "$OUT/probe-scratch.log" 2>&1
echo "probe rc=$?"; cat "$OUT/probe-scratch.log"
