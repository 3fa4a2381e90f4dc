#!/usr/bin/env bash
# Session 30, the final call on the code of main (the kernels of session 28, whose own final runs
# were never made: the fp32 backward's 4096-value tiles at C <= 128, CLN_BWD_TILE_32BIT):
#   OUT=out bash bench/gpu_s30_final.sh   -> $OUT/s30-final.tgz
# make test-all; the README's main job (make bench at the target shapes, every backend and peer,
# plots); the seed shape (80, 64, 301) with the cLN peers.
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-270} gpu_test_all
gpu_make_bench 230
timeout -s KILL 60 python3 -m bench --op cln --backend triton,cuda_ext --peers eager,compile \
  --mode fwd,fwd_bwd --dtype fp32 --shapes 80x64x301 --cuda-graph all --budget 0.15 \
  --out "$OUT" --tag seed-peers > "$OUT/bench-seed.log" 2>&1
echo "seed bench rc=$?"; tail -20 "$OUT/bench-seed.log"
gpu_archive s30-final
ls -la "$OUT"
