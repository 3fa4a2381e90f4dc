#!/usr/bin/env bash
# Session 46's call on the 2-GPU machine (nvidia-h200-x2): make test-all on the kernels of HEAD,
# which there also runs tests/test_devices.py's placement tests on cuda:1 and on both GPUs at
# once (both compiled backends); their lines printed, all in one archive.
#   OUT=out bash bench/gpu_s46.sh
set -uo pipefail
source bench/gpu_env.sh
nvidia-smi -L | tee -a "$OUT/gpu.txt"
gpu_tests_timed 420
grep -E "test_devices.py::" "$OUT/test-all.log" | sed 's/^\[gw[0-9]*\] *\[ *[0-9]*%\] *//' | sort | head -60
gpu_archive s46
