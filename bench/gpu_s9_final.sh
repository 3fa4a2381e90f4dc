#!/usr/bin/env bash
# Session 9, final calls on the code of main.
#   OUT=out bash bench/gpu_s9_final.sh tests   every test on the GPU (make test-all), then the
#                                               cuda_ext cLN defaults (bench.tune --quick)
#   OUT=out bash bench/gpu_s9_final.sh bench   cLN of both compiled backends with eager and
#                                               torch.compile in one run, RMSNorm with F.rms_norm
#                                               and Liger in one run (python -m bench, CUDA
#                                               graphs), the same-size copy and the long sequence
set -uo pipefail
source bench/gpu_env.sh
case "${1:-tests}" in
  tests)
    T_TESTS=${T_TESTS:-380} gpu_test_all
    timeout -s KILL ${T_CLN:-45} python3 -m bench.tune --backend cuda_ext --ops cln --quick \
      --parts shapes,long > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
    ;;
  bench)
    gpu_bench_cln 250
    timeout -s KILL ${T_RMS:-200} python3 -m bench --op rmsnorm --backend triton,cuda_ext \
      --peers F.rms_norm,liger --mode fwd,fwd_bwd --dtype bf16,fp32 \
      --shapes 2048x4096,32768x4096,16384x8192 --cuda-graph all --budget 0.15 \
      --out "$OUT" --tag rms-peers > "$OUT/bench-rms.log" 2>&1
    echo "rms bench rc=$?"; tail -30 "$OUT/bench-rms.log"
    gpu_copy_long 50
    ;;
esac
