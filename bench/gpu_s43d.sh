#!/usr/bin/env bash
# Session 43's last call (NOTES 44.4): the forward no backward follows with gamma / beta read
# before its prefix wait (CLN_FWD_ALONE_AFFINE_EARLY, on): its GPU path test, two rounds of
# bench.tune against it off (fp32 and bf16 forward), then the cLN benchmark with its peers;
# archived into $OUT/s43d.tgz.
#   OUT=out bash bench/gpu_s43d.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL 60 python3 -m pytest -q tests/test_triton_paths.py -k "affine_early" \
  tests/test_cln.py::test_forward_alone_matches_forward_for_training > "$OUT/test-affine.log" 2>&1
echo "tests rc=$?"; tail -2 "$OUT/test-affine.log"
T_TUNE=45 TUNE_DTYPE=fp32,bf16 gpu_tune_rounds alone43d "default,alone affine late" fwd
gpu_bench_cln 100 | tail -3
gpu_archive s43d
