#!/usr/bin/env bash
# Session 50: does DRAM locality hold the forward's loads and stores back at B = 16?  At
# (16, 512, 4000) the batch-interleaved tiles stream 16 x 512 channel rows at once (8,192;
# 2 x 128 = 256 at (2, 128, 64000), whose loads and stores alone reach 0.86 against 0.73 in
# bf16).  The ablation levels with tickets in runs of 2-16 consecutive tiles of one sequence
# (`CLN_TICKET_RUN`; program ids, no stagger or pace), fp32 and bf16 at the three target
# shapes, into $OUT/ablate50c.log; archived into $OUT/s50c.tgz.
#   OUT=out bash bench/gpu_s50c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 400 python3 -m bench.ablate_cln --shapes 16x512x4000,4x256x16000,2x128x64000 \
  > "$OUT/ablate50c.log" 2>&1
echo "ablate rc=$?"; cat "$OUT/ablate50c.log"
gpu_archive s50c
