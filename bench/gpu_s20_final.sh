#!/usr/bin/env bash
# Session 20, the final calls on the final code (colsum loads of up to 64 rows; the 16-bit
# backward's 4096-value tile at C <= 128):
#   OUT=out bash bench/gpu_s20_final.sh bench   the cLN benchmark with its peers (the README's
#       cLN table), then the README's main job (make bench at the target shapes, every backend
#       and peer, plots), all in one archive (a call returns at most 8 files)
#   OUT=out bash bench/gpu_s20_final.sh tests   make test-all (xdist where .whl/ has it)
set -uo pipefail
source bench/gpu_env.sh
case "${1:-bench}" in
  bench)
    gpu_final_bench s20-final
    ;;
  tests)
    T_TESTS=${T_TESTS:-400} gpu_test_all
    ;;
esac
