#!/usr/bin/env bash
# Session 27: cuda_ext's chained launches only for grids of a full wave (pdl_grid): the
# chained-launch tests, the seed's variants, then one round of bench.tune against plain
# launches at the target shapes.
#   OUT=out bash bench/gpu_s27d.sh
set -uo pipefail
source bench/gpu_env.sh
par=$(gpu_xdist_args)
timeout -s KILL 200 python3 -m pytest -q $par tests/test_cuda_ext_paths.py \
  tests/test_triton_paths.py -k pdl > "$OUT/test-pdl.log" 2>&1
echo "pdl tests rc=$?"; tail -3 "$OUT/test-pdl.log"
timeout -s KILL 100 python3 -m bench.tune --backend cuda_ext --ops cln --parts seed \
  > "$OUT/tune-seed27d.log" 2>&1
echo "seed rc=$?"; grep cln "$OUT/tune-seed27d.log"
timeout -s KILL 150 python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes \
  --modes fwd,fwd_bwd --variants "default,no pdl" --dtype fp32,bf16 > "$OUT/tune-pdl27d.log" 2>&1
echo "tune rc=$?"; head -2 "$OUT/tune-pdl27d.log"; grep -h "cln" "$OUT/tune-pdl27d.log" | sort -k3,6 -s
