#!/usr/bin/env bash
# Session 20, one call on the 1-GPU machine, Triton only: the 16-bit backward's tile of 4096
# values (CLN_BWD_TILE_16BIT) against the default 8192, bf16, two rounds in separate processes.
#   OUT=out bash bench/gpu_s20c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for round in 1 2; do
  timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --dtype bf16 --variants "default,bwd16 tile4096" > "$OUT/tune-bwd16-tile-$round.log" 2>&1
  echo "tune round $round rc=$?"; grep fwd_bwd "$OUT/tune-bwd16-tile-$round.log"
done
