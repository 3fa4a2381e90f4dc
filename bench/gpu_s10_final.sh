#!/usr/bin/env bash
# Session 10, final calls on the code of main (the two GPU calls that produced
# bench/results/nvidia-h200-s10-final-*; the RMSNorm kernels had not changed since session 9's
# final run, so RMSNorm was not re-benchmarked).
#   OUT=out bash bench/gpu_s10_final.sh tests   every test on the GPU (make test-all)
#   OUT=out bash bench/gpu_s10_final.sh bench   cLN of both compiled backends with eager and
#                                                torch.compile in one run (CUDA graphs), the
#                                                same-size copy and the long sequence
set -uo pipefail
source bench/gpu_env.sh
case "${1:-tests}" in
  tests)
    T_TESTS=${T_TESTS:-440} gpu_test_all
    ;;
  bench)
    gpu_bench_cln 270
    gpu_copy_long 60
    ;;
esac
