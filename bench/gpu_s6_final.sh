#!/usr/bin/env bash
# Last GPU call of session 6: every test on the GPU (make test-all), the cLN figures of both
# compiled backends' defaults (bench.tune --quick: the three issue shapes and the seed shape),
# then RMSNorm against F.rms_norm and Liger-Kernel in one run (bench/gpu_rms_peers.sh).
#   bash bench/gpu_s6_final.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_test_all
timeout -s KILL ${T_CLN:-100} python3 -m bench.tune --backend cuda_ext,triton --ops cln \
  --quick > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
T_BENCH=${T_BENCH:-120} bash bench/gpu_rms_peers.sh
