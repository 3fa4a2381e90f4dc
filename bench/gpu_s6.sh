#!/usr/bin/env bash
# Session 6, first GPU call: the 16-bit RMSNorm backward row kernel with its dw partial in
# shared memory (64 registers, two rows of 8192 per SM).  GPU tests of the cuda_ext RMSNorm
# paths, the backward variants (bench.tune), then the peers table (bench/gpu_rms_peers.sh).
#   bash bench/gpu_s6.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-150} python3 -m pytest -q -x tests/test_cuda_ext_paths.py \
  tests/test_rmsnorm.py --backend cuda_ext -k "rms or RMS" > "$OUT/test-rms.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-rms.log"
timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend cuda_ext --ops rmsnorm \
  > "$OUT/tune-rmsnorm-row.log" 2>&1; cat "$OUT/tune-rmsnorm-row.log"
T_BENCH=${T_BENCH:-150} bash bench/gpu_rms_peers.sh
