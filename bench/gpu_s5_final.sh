#!/usr/bin/env bash
# Last GPU call of session 5: every test on the GPU (make test-all), then the RMSNorm figures of
# the defaults (bench.tune --quick, both compiled backends) and against F.rms_norm and
# Liger-Kernel (python -m bench), and the cLN seed shape of both backends.
#   bash bench/gpu_s5_final.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_test_all
timeout -s KILL ${T_RMS:-70} python3 -m bench.tune --backend triton,cuda_ext --ops rmsnorm \
  --quick > "$OUT/tune-rmsnorm-defaults.log" 2>&1; cat "$OUT/tune-rmsnorm-defaults.log"
timeout -s KILL ${T_SEED:-30} python3 -m bench.tune --backend cuda_ext,triton --ops cln \
  --parts seed --quick > "$OUT/tune-seed-defaults.log" 2>&1; cat "$OUT/tune-seed-defaults.log"
T_BENCH=${T_BENCH:-120} bash bench/gpu_rms_peers.sh
