#!/usr/bin/env bash
# Session 20, one call on the 1-GPU machine, Triton only: the 16-bit backward's tile of 4096
# values (CLN_BWD_TILE_16BIT) against 8192, bf16, two rounds in separate processes.  The run
# (at cab5144, where 8192 was the default) compared "default" with a variant of 4096 since
# renamed; 4096 where rows stay >= 64 B is the default now, so the same pair is now
# "bwd16 tile8192" against "default" (and "bwd16 tile4096 rows32" is 4096 at C = 256 too).
#   OUT=out bash bench/gpu_s20c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for round in 1 2; do
  timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --dtype bf16 --variants "bwd16 tile8192,default,bwd16 tile4096 rows32" > "$OUT/tune-bwd16-tile-$round.log" 2>&1
  echo "tune round $round rc=$?"; grep fwd_bwd "$OUT/tune-bwd16-tile-$round.log"
done
