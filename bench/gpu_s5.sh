#!/usr/bin/env bash
# GPU call (session 5): the cLN seed shape with every cuda_ext kernel family and Triton
# (bench.tune --parts seed), the cuda_ext RMSNorm backward variants of bench.tune, then RMSNorm
# of both compiled backends against F.rms_norm and Liger-Kernel.  Its logs
# (bench/results/nvidia-h200-s5-tune-seed.log, -tune-rmsnorm-ahead.log) were taken with the
# backward variants of that time (a one-row-ahead schedule, since removed: NOTES section 8.2).
#   bash bench/gpu_s5.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_SEED:-60} python3 -m bench.tune --backend cuda_ext,triton --ops cln \
  --parts seed > "$OUT/tune-seed.log" 2>&1; cat "$OUT/tune-seed.log"
timeout -s KILL ${T_RMS:-90} python3 -m bench.tune --backend cuda_ext --ops rmsnorm \
  > "$OUT/tune-rmsnorm-ahead.log" 2>&1; cat "$OUT/tune-rmsnorm-ahead.log"
T_BENCH=${T_BENCH:-150} bash bench/gpu_rms_peers.sh
