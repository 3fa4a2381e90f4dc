#!/usr/bin/env bash
# Session 60 (NOTES 59.5): what one Triton cLN forward executes, per value. ncu (no clock
# control) of the second of two forwards (bench.ablate_cln --once) at level 0 (the whole
# kernel) and level 3 (its loads and stores alone), bf16 and fp32, at (16, 512, 4000) and
# (4, 256, 16000): instructions executed, issue-active cycles, warps active, duration, DRAM
# throughput; into $OUT/ncu60.txt, archived into $OUT/s60b.tgz.
#   OUT=out bash bench/gpu_s60b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__thread_inst_executed.sum
for d in bf16 fp32; do
  for s in 16x512x4000 4x256x16000; do
    for lv in 0 3; do
      echo "== $d $s level $lv" | tee -a "$OUT/ncu60.txt"
      timeout -s KILL 90 ncu --clock-control none -k regex:_cln_fwd_kernel --launch-skip 1 -c 1 \
        --metrics "$M" python3 -m bench.ablate_cln --once "$d" --shape "$s" --level "$lv" \
        2>&1 | grep -E "^\s+(gpu__|dram__|sm__|smsp__)|==PROF==|Error" | tee -a "$OUT/ncu60.txt"
    done
  done
done
gpu_archive s60b
