#!/usr/bin/env bash
# GPU call (session 5): the RMSNorm backward variants of cuda_ext (bench.tune), then one ncu
# profile of a forward + backward of cuda_ext and Triton at (16384, 8192) and (2048, 4096)
# bf16.  Its logs (bench/results/nvidia-h200-s5-tune-rmsnorm-modes.log, -ncu-rms-bwd-*.txt)
# were taken with the variants of that time (row ahead, dw in registers, smaller grids of the
# general kernel; since removed: NOTES section 8.2).
#   bash bench/gpu_s5b.sh            (TUNE=0: the profiles only)
set -uo pipefail
source bench/gpu_env.sh
if [ "${TUNE:-1}" = 1 ]; then
  timeout -s KILL ${T_RMS:-150} python3 -m bench.tune --backend cuda_ext --ops rmsnorm \
    --dtype ${RMS_DTYPES:-fp32,bf16} > "$OUT/tune-rmsnorm-modes.log" 2>&1
  cat "$OUT/tune-rmsnorm-modes.log"
fi
for shape in ${NCU_SHAPES:-16384x8192 2048x4096}; do
  timeout -s KILL ${T_NCU:-90} ncu --clock-control none --nvtx --nvtx-include "prof/" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis \
    python3 -m bench.profile_rms_bwd --backend cuda_ext,triton --shape $shape --dtype bf16 \
    > "$OUT/ncu-rms-$shape.txt" 2>&1
  echo "ncu $shape rc=$?"
  grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|No Eligible|Warp Cycles Per Issued" "$OUT/ncu-rms-$shape.txt" | head -80
done
