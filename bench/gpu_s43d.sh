#!/usr/bin/env bash
# Written in session 43 (no device time was left to run it, NOTES 44.4); run as session 44's
# first call at 56502b2 (NOTES 45.1, nvidia-h200-s44-*43d*.log): the forward no backward follows
# with gamma / beta read before its prefix wait where it is paced (CLN_FWD_ALONE_AFFINE_EARLY,
# off by default then, on since). Its GPU path test (the reads before the wait bitwise against
# those after; pytest's -k also deselects the forward-alone test named beside it, so only that
# test's 4 cases ran: bench/gpu_s44.sh ran both), then two rounds of bench.tune of it against
# the default (fp32 forward); archived into $OUT/s43d.tgz.
#   OUT=out bash bench/gpu_s43d.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 60 python3 -m pytest -q tests/test_triton_paths.py -k "affine_early" \
  tests/test_cln.py::test_forward_alone_matches_forward_for_training --backend triton \
  > "$OUT/test-affine.log" 2>&1
echo "tests rc=$?"; tail -2 "$OUT/test-affine.log"
T_TUNE=40 TUNE_DTYPE=fp32 gpu_tune_rounds alone43d "default,alone affine early" fwd
gpu_archive s43d
