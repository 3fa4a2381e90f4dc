#!/usr/bin/env bash
# Session 42's second call (NOTES 43.2): the Triton forward's programs paced from one start time
# (CLN_FWD_PACE_GBPS, off; session 31 measured it before the merged prefix and the per-thread
# polls) and longer first-wave staggers, against the default, float32 at the target shapes,
# forward and fwd+bwd: the pace's GPU test (bitwise the plain forward's outputs), then two
# rounds of bench.tune, everything archived into $OUT/s42b.tgz.
#   OUT=out bash bench/gpu_s42b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 120 python3 -m pytest -q --backend triton tests/test_triton_paths.py -k pace \
  > "$OUT/test-pace42.log" 2>&1
echo "pace test rc=$?"; tail -n 2 "$OUT/test-pace42.log"
date +%T
TUNE_DTYPE=fp32 T_TUNE=260 gpu_tune_rounds pace42 \
  "default,pace 5000,pace 6000,pace 7000,pace 8000,pace 10000,stagger fwd 4us,stagger fwd 5us" \
  fwd,fwd_bwd
date +%T
gpu_archive s42b
