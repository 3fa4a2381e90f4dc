#!/usr/bin/env bash
# Session 26: (1) what the scratch zeroing costs now that the cLN kernel launches as the zero
# kernel's programmatic dependent (bench.probe_scratch: as is / plain / pre-zeroed arena);
# (2) cache hints on the tiles read once and on the outputs, two rounds of bench.tune.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s26.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_PROBE:-150} python3 -m bench.probe_scratch > "$OUT/probe-scratch.log" 2>&1
echo "probe rc=$?"; cat "$OUT/probe-scratch.log"
T_TUNE=${T_TUNE:-170} gpu_tune_rounds hints26 \
  "default,ld evict_first,st cs,ld evict_first st cs" fwd,fwd_bwd
