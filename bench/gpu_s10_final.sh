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
    timeout -s KILL ${T_BENCH:-270} python3 -m bench --op cln --backend triton,cuda_ext \
      --peers eager,compile --mode fwd,fwd_bwd --dtype fp32,bf16 \
      --shapes 16x512x4000,4x256x16000,2x128x64000,80x64x301 --cuda-graph all --budget 0.15 \
      --out "$OUT" --tag cln-peers > "$OUT/bench-cln.log" 2>&1
    echo "cln bench rc=$?"; tail -45 "$OUT/bench-cln.log"
    timeout -s KILL ${T_LONG:-60} python3 -m bench.tune --backend cuda_ext,triton --ops cln \
      --quick --parts copy,long > "$OUT/tune-copy-long.log" 2>&1; cat "$OUT/tune-copy-long.log"
    ;;
esac
