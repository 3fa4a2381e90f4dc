#!/usr/bin/env bash
# Session 8, A/B of the streaming forward with 8 producer warps (384 threads, 2 blocks per SM)
# against 4 (256 threads, up to 3 blocks per SM): exp_a/ holds the previous commit's
# backends/common/bench, both extensions are built side by side, the new one's cLN tests run,
# then bench.tune --quick alternates A, B, A, B (bench/gpu_ab.sh).
#   OUT=out bash bench/gpu_s8d.sh
# Run at commit a85557b (the experiment; exp_a/ was `git archive 8b688e3 backends common bench`);
# the 8-warp forward was removed after it (NOTES 11.6).
set -uo pipefail
source bench/gpu_ab.sh
ab_setup
T_TESTS=90 ab_tests tests/test_cuda_ext_paths.py tests/test_cln.py --backend cuda_ext -k "not rmsnorm"
ab_tune --backend cuda_ext --ops cln --quick --parts shapes,long
