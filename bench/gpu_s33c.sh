#!/usr/bin/env bash
# Session 33: where the Triton forward's time goes at the long-T shape, on the code of main:
# the ablation levels timed (bench.ablate_cln --no-runs), then ncu of one forward at
# (2, 128, 64000) bf16 at levels 0 (the kernel), 1 (no prefix wait) and 3 (loads and stores
# alone), and fp32 at level 0.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s33c.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL 150 python3 -m bench.ablate_cln --no-runs > "$OUT/ablate-fwd.log" 2>&1
echo "ablate rc=$?"; cat "$OUT/ablate-fwd.log"
for run in "bf16 0" "bf16 1" "bf16 3" "fp32 0"; do
  set -- $run
  timeout -s KILL 90 ncu --clock-control none -k regex:_cln_fwd_kernel --launch-skip 1 -c 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis \
    python3 -m bench.ablate_cln --once "$1" --shape 2x128x64000 --level "$2" \
    > "$OUT/ncu-fwd-$1-L$2.txt" 2>&1
  echo "ncu $1 L$2 rc=$?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" \
    "$OUT/ncu-fwd-$1-L$2.txt" | head -20
done
