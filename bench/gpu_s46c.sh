#!/usr/bin/env bash
# Session 46: the widened placement tests (tests/test_devices.py) dry-run on a one-GPU machine,
# with cuda:0 standing in for the second GPU (NORMK_TEST_SECOND_GPU=0): every path and the
# bitwise determinism of repeated interleaved calls, not the placement itself (which needs
# bench/gpu_s46.sh on nvidia-h200-x2).
#   OUT=out bash bench/gpu_s46c.sh
set -uo pipefail
source bench/gpu_env.sh
NORMK_TEST_SECOND_GPU=0 timeout -s KILL 400 python3 -m pytest -v --durations=15 \
  tests/test_devices.py > "$OUT/test-devices-dry.log" 2>&1
echo "devices (dry run on cuda:0) rc=$?"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" \
  "$OUT/test-devices-dry.log" | sed 's/^tests.test_devices.py:://' | head -50
grep -A 30 "slowest" "$OUT/test-devices-dry.log" | head -20
