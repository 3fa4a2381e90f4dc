#!/usr/bin/env bash
# Session 32, after the last kernel-module change (the first-wave size read through one helper
# by the stagger and the prefetch): the Triton path tests on the GPU (every schedule, the
# staggers, pacing, prefetch, PDL chains) into $OUT/test-paths.log.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s32e.sh
set -uo pipefail
source bench/gpu_env.sh
par=$(gpu_xdist_args)
timeout -s KILL 240 python3 -m pytest -q $par tests/test_triton_paths.py tests/test_cln.py \
  --backend triton > "$OUT/test-paths.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-paths.log"
