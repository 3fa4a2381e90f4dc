#!/usr/bin/env bash
# Last GPU calls of session 7, in two parts (one call may run 10 minutes):
#   OUT=out bash bench/gpu_s7_final.sh tests   # build, then every test on the GPU (make test-all)
#   OUT=out bash bench/gpu_s7_final.sh bench   # the cLN figures of both compiled backends'
#                                              # defaults, then RMSNorm with its peers
set -uo pipefail
source bench/gpu_env.sh
case "${1:-tests}" in
  tests) gpu_test_all ;;
  bench)
    timeout -s KILL ${T_CLN:-110} python3 -m bench.tune --backend cuda_ext,triton --ops cln \
      --quick > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
    T_BENCH=${T_BENCH:-120} bash bench/gpu_rms_peers.sh ;;
esac
