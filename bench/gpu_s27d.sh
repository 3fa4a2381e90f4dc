#!/usr/bin/env bash
# Session 27: cuda_ext's chained launches only for grids of a full wave (pdl_grid): the
# chained-launch tests, the seed's variants, then one round of bench.tune against plain
# launches at the target shapes.
#   OUT=out bash bench/gpu_s27d.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_test_pdl
gpu_tune_seed seed27d cuda_ext
timeout -s KILL 150 python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes \
  --modes fwd,fwd_bwd --variants "default,no pdl" --dtype fp32,bf16 > "$OUT/tune-pdl27d.log" 2>&1
echo "tune rc=$?"; head -2 "$OUT/tune-pdl27d.log"; grep -h "cln" "$OUT/tune-pdl27d.log" | sort -k3,6 -s
