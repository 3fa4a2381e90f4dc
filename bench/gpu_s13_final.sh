#!/usr/bin/env bash
# Session 13, final calls on the code of main (bench/results/nvidia-h200-s13-final-*): the Triton
# cLN kernels with packed 16-bit tiles (CLN_FWD_PAIRS / CLN_BWD_PAIRS).
#   OUT=out bash bench/gpu_s13_final.sh bench   cLN of both compiled backends with eager and
#                                                torch.compile in one run (CUDA graphs), the
#                                                same-size copy and the long sequence; then two
#                                                Triton bf16 variants and the Triton ablation
#   OUT=out bash bench/gpu_s13_final.sh tests   every test on the GPU (make test-all)
set -uo pipefail
source bench/gpu_env.sh
case "${1:-bench}" in
  tests)
    T_TESTS=${T_TESTS:-440} gpu_test_all
    ;;
  bench)
    gpu_bench_cln 270
    gpu_copy_long 60
    timeout -s KILL ${T_TUNE:-70} python3 -m bench.tune --backend triton --ops cln --dtype bf16 \
      --parts shapes --variants "default,fwd16 tile16k,group256" > "$OUT/tune-bf16.log" 2>&1
    echo "tune rc=$?"; cat "$OUT/tune-bf16.log"
    timeout -s KILL ${T_ABLATE:-45} python3 -m bench.ablate_cln > "$OUT/ablate.log" 2>&1
    echo "ablate rc=$?"; cat "$OUT/ablate.log"
    ;;
esac
