#!/usr/bin/env bash
# Session 8, second call: the cuda_ext path tests after the plan change; both compiled backends'
# cLN defaults against eager and torch.compile in one run (python -m bench, CUDA graphs); the
# same-size copy reference and the long sequence (bench.tune); the tile skeleton at 64-channel
# tiles with 1 KB rows (the access pattern of a tile split over a cluster of blocks).
#   OUT=out bash bench/gpu_s8b.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-70} python3 -m pytest -q tests/test_cuda_ext_paths.py \
  --backend cuda_ext > "$OUT/test-paths.log" 2>&1
echo "path tests rc=$?"; tail -2 "$OUT/test-paths.log"
timeout -s KILL ${T_BENCH:-250} python3 -m bench --op cln --backend triton,cuda_ext \
  --peers eager,compile --mode fwd,fwd_bwd --dtype fp32,bf16 \
  --shapes 16x512x4000,4x256x16000,2x128x64000,80x64x301 --cuda-graph all --budget 0.15 \
  --out "$OUT" --tag ${TAG:-cln-peers} > "$OUT/bench-cln.log" 2>&1
echo "bench rc=$?"; tail -60 "$OUT/bench-cln.log"
timeout -s KILL ${T_CLN:-50} python3 -m bench.tune --backend cuda_ext,triton --ops cln --quick \
  --parts copy,long > "$OUT/tune-copy-long.log" 2>&1; cat "$OUT/tune-copy-long.log"
timeout -s KILL ${T_SKEL:-100} python3 -m bench.tile_skeleton --modes hold_async,stream \
  --shapes 16x512x4000,128x64x4000,4x256x16000,16x64x16000,2x128x64000,4x64x64000 \
  --ppr 8,16,32,64 --reps 5 > "$OUT/tile-skeleton.log" 2>&1; cat "$OUT/tile-skeleton.log"
