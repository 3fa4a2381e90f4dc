#!/usr/bin/env bash
# Session 32, the final call on the code of main (the default kernels as in session 31; new:
# the one-warp knobs, off, and their GPU tests): make test-all, then the cLN benchmark with its
# peers, in one archive.
#   OUT=out bash bench/gpu_s32_final.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-320} gpu_final_call all s32
ls -la "$OUT"
