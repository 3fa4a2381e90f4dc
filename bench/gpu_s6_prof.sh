#!/usr/bin/env bash
# Session 6: where an RMSNorm forward + backward spends its device time, per kernel
# (torch.profiler), cuda_ext against Triton, bf16.
#   bash bench/gpu_s6_prof.sh
set -uo pipefail
source bench/gpu_env.sh
for shape in 2048x4096 16384x8192; do
  timeout -s KILL 90 python3 -m bench.profile_rms_bwd --backend cuda_ext,triton --shape $shape \
    --dtype bf16 --kernels 20
done 2>&1 | tee "$OUT/prof-rms-kernels.log"
