#!/usr/bin/env bash
# Session 6: why the cp.async ring of the cuda_ext RMSNorm backward row kernel (RMS_BWD_STAGES
# 2-3) is slower than no ring (S1): kernel times per ring depth (torch.profiler), then ncu of
# S1 against S2 at (16384, 8192) bf16.
#   bash bench/gpu_s6_ncu.sh
set -uo pipefail
source bench/gpu_env.sh
for s in 1 2 3; do
  for shape in 2048x4096 16384x8192; do
    timeout -s KILL 60 python3 -m bench.profile_rms_bwd --backend cuda_ext --shape $shape \
      --dtype bf16 --kernels 20 --set RMS_BWD_STAGES=$s 2>&1 | grep -v Warn | sed "s/^/S$s /"
  done
done | tee "$OUT/prof-rms-stages.log"
for s in 1 2; do
  timeout -s KILL 120 ncu --clock-control none --nvtx --nvtx-include "prof/" -k regex:row_kernel \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    python3 -m bench.profile_rms_bwd --backend cuda_ext --shape 16384x8192 --dtype bf16 \
    --set RMS_BWD_STAGES=$s > "$OUT/ncu-rms-row-S$s.txt" 2>&1
  echo "ncu S$s rc=$?"
done
