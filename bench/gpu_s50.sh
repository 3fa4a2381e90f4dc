#!/usr/bin/env bash
# Session 50: the packed bf16 forward with longer rows, on the current code.  Its loads and
# stores alone reach 0.73 / 0.75 of copy at (16, 512, 4000) / (4, 256, 16000), whose tiles have
# 64-B rows, and 0.86 at (2, 128, 64000), whose rows are 128 B (NOTES 46.2); session 19 tried
# longer rows on a kernel 30 % slower than today's.  First the ablation levels at the three
# shapes, bf16, default and with tiles of 16384 values (256 x 64, 128 x 128 over 4 warps), into
# $OUT/ablate50.log; then two rounds, in separate processes, of bench.tune's bf16 forward alone
# and fwd+bwd (with registers and spills): default, "fwd16 t16k", "fwd16 t16k nreg128",
# "fwd16 t32k ept256", into $OUT/tune-rows50-{1,2}.log.  Archived into $OUT/s50.tgz.
#   OUT=out bash bench/gpu_s50.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
date +%T
timeout -s KILL 200 python3 -m bench.ablate_cln --no-runs --dtype bf16 \
  --shapes 16x512x4000,4x256x16000,2x128x64000 \
  --with "t16k:CLN_FWD_TILE_16BIT=16384" > "$OUT/ablate50.log" 2>&1
echo "ablate rc=$?"; cat "$OUT/ablate50.log"
date +%T
ROUNDS=2 TUNE_DTYPE=bf16 T_TUNE=200 TUNE_ARGS=--regs gpu_tune_rounds rows50 \
  "default,fwd16 t16k,fwd16 t16k nreg128,fwd16 t32k ept256" fwd,fwd_bwd
date +%T
gpu_archive s50
ls -la "$OUT"
