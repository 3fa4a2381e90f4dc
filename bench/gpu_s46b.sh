#!/usr/bin/env bash
# Session 46: where the cLN backward alone spends its time on the current code (the last such
# run was session 19's, NOTES 22.4b): python3 -m bench.ablate_cln --bwd (the Triton backward's
# ablation levels with and without dgamma / dbeta, cuda_ext's, torch.add of the same bytes, and
# each backward call's kernels by torch.profiler) at the three cLN target shapes.
#   OUT=out bash bench/gpu_s46b.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL 300 python3 -m bench.ablate_cln --bwd > "$OUT/ablate46-bwd.log" 2>&1
echo "ablate rc=$?"; cat "$OUT/ablate46-bwd.log"
