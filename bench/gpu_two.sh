#!/usr/bin/env bash
# GPU call on the 2-GPU machine (nvidia-h200-x2): device and stream placement of every backend
# (tests/test_devices.py: a tensor on cuda:1 runs, and differentiates, on cuda:1).
#   bash bench/gpu_two.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-150} python3 -m pytest -q -rs -p no:cacheprovider tests/test_devices.py \
  > "$OUT/test-devices.log" 2>&1
echo "test_devices rc=$?"; tail -8 "$OUT/test-devices.log"
