#!/usr/bin/env bash
# Session 18: the fp32 forward with 16384-value tiles over 4 warps (rows of 128 B at C = 512),
# two rounds against the default in separate processes.
#   OUT=out bash bench/gpu_s18b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for round in 1 2; do
  timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --dtype fp32 --variants "default,fwd rows128 ept128" > "$OUT/tune-rows128-$round.log" 2>&1
  echo "tune round $round rc=$?"; grep -v '^$' "$OUT/tune-rows128-$round.log"
done
