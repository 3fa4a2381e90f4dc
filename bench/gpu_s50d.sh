#!/usr/bin/env bash
# Session 50: what the Triton forward's loads and stores alone (ablation level 3) move to and
# from DRAM.  Level 3 reaches 0.73 / 0.75 / 0.85 of copy in bf16 at (16, 512, 4000) /
# (4, 256, 16000) / (2, 128, 64000), 0.83 / 0.83 / 0.87 in fp32, whatever the tickets' order
# (gpu_s50c.sh) or the rows' length (gpu_s50.sh).  ncu (no clock control) of the second of two
# level-3 forwards at each case: DRAM bytes read / written against the tensor's, L2 sector hit
# rate, DRAM throughput, duration; into $OUT/ncu50d.txt, archived into $OUT/s50d.tgz.
#   OUT=out bash bench/gpu_s50d.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
M=$M,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum
M=$M,lts__t_sectors_srcunit_tex_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active
for d in bf16 fp32; do
  for s in 16x512x4000 4x256x16000 2x128x64000; do
    echo "== $d $s level 3" | tee -a "$OUT/ncu50d.txt"
    timeout -s KILL 120 ncu --clock-control none -k regex:_cln_fwd_kernel --launch-skip 1 -c 1 \
      --metrics "$M" python3 -m bench.ablate_cln --once "$d" --shape "$s" --level 3 \
      2>&1 | grep -E "^\s+(gpu__|dram__|lts__|sm__)|==PROF==|Error" | tee -a "$OUT/ncu50d.txt"
  done
done
gpu_archive s50d
