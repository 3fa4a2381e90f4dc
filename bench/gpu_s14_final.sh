#!/usr/bin/env bash
# Session 14, final calls on the code of main (bench/results/nvidia-h200-s14-final-*).
#   OUT=out bash bench/gpu_s14_final.sh tests   every test on the GPU (make test-all)
#   OUT=out bash bench/gpu_s14_final.sh bench   cLN of both compiled backends with eager and
#                                                torch.compile in one run (CUDA graphs), the
#                                                same-size copy and the long sequence
set -uo pipefail
source bench/gpu_env.sh
case "${1:-bench}" in
  tests)
    T_TESTS=${T_TESTS:-480} gpu_test_all
    ;;
  bench)
    gpu_bench_cln 300
    gpu_copy_long 90
    ;;
esac
