#!/usr/bin/env bash
# Session 46's call on the 2-GPU machine (nvidia-h200-x2): the placement tests on cuda:1 and on
# both GPUs at once (tests/test_devices.py, every backend), verbose, into one log.
#   OUT=out bash bench/gpu_s46.sh
set -uo pipefail
source bench/gpu_env.sh
nvidia-smi -L | tee -a "$OUT/gpu.txt"
timeout -s KILL 400 python3 -m pytest -v --durations=15 tests/test_devices.py \
  > "$OUT/test-devices.log" 2>&1
echo "devices rc=$?"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$OUT/test-devices.log" \
  | sed 's/^tests.test_devices.py:://' | head -50
