#!/usr/bin/env bash
# Session 50, after gpu_s50.sh (longer rows over 4 warps: the statistics cost 5.7-9.1 us more,
# the loads and stores alone 0.77 / 0.72 at C = 256 / 128): tiles of 16384 values over 2 warps
# (256 values per thread, no register cap; 4 programs per SM if ptxas stays within 256
# registers).  The ablation levels at the three bf16 shapes (default, "t16k ept256") into
# $OUT/ablate50b.log, then two rounds of bench.tune's bf16 forward alone and fwd+bwd with
# registers (default, "fwd16 t16k ept256") into $OUT/tune-ept50b-{1,2}.log; $OUT/s50b.tgz.
#   OUT=out bash bench/gpu_s50b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 200 python3 -m bench.ablate_cln --no-runs --dtype bf16 \
  --shapes 16x512x4000,4x256x16000,2x128x64000 \
  --with "t16k ept256:CLN_FWD_TILE_16BIT=16384;CLN_FWD_EPT_16BIT=256;CLN_FWD_MAXNREG_PAIRS=None" \
  > "$OUT/ablate50b.log" 2>&1
echo "ablate rc=$?"; cat "$OUT/ablate50b.log"
ROUNDS=2 TUNE_DTYPE=bf16 T_TUNE=200 TUNE_ARGS=--regs gpu_tune_rounds ept50b \
  "default,fwd16 t16k ept256" fwd,fwd_bwd
gpu_archive s50b
