#!/usr/bin/env bash
# Session 31: every forward program's loads paced to a rate from the zero kernel's start stamp
# (CLN_FWD_PACE_GBPS, off by default) against the first-wave stagger: its GPU test and the
# compile of its kernels first, then two rounds of bench.tune, forward and fwd+bwd.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s31c.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL 120 python3 -m pytest -q tests/test_triton_paths.py -k "pace or stagger" \
  > "$OUT/test-pace.log" 2>&1
echo "pace tests rc=$?"; tail -3 "$OUT/test-pace.log"
T_TUNE=${T_TUNE:-120} gpu_tune_rounds pace31 \
  "default,pace 3500,pace 4000,pace 4500,pace 5000,pace 6000" fwd,fwd_bwd
