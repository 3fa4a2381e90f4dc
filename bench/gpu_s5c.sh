#!/usr/bin/env bash
# GPU call (session 5): the cuda_ext RMSNorm row kernel and the resident cLN forward through
# the shared harness (their tests), the RMSNorm backward kernels side by side (bench.tune:
# default, general kernel, row kernel with 1-3 stages), then RMSNorm of both compiled
# backends against F.rms_norm and Liger-Kernel (python -m bench).
#   bash bench/gpu_s5c.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-150} python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_rmsnorm.py tests/test_cuda_ext_paths.py tests/test_cln.py -k "cuda_ext or paths" \
  > "$OUT/tests-s5.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/tests-s5.log"
timeout -s KILL ${T_RMS:-150} python3 -m bench.tune --backend cuda_ext --ops rmsnorm \
  > "$OUT/tune-rmsnorm-row.log" 2>&1; cat "$OUT/tune-rmsnorm-row.log"
T_BENCH=${T_BENCH:-150} bash bench/gpu_rms_peers.sh
