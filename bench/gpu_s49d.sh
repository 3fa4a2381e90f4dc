#!/usr/bin/env bash
# Session 49: the fp32 forward at (4, 256, 16000) with rows of 256 B (64 frames, tiles of
# 16384 values) instead of 128 B: its loads and stores alone reach 0.82 of copy there against
# 0.87 at (2, 128, 64000), whose rows are 256 B (NOTES 46.2).  Three rounds, in separate
# processes, of bench.tune's fp32 forward alone and fwd+bwd at the target shapes (with the
# kernels' registers and spills, listed after the timings): default, "fwd wide256" (4 warps,
# uncapped), "fwd wide256 w8" (8 warps, 128 registers).  Into $OUT/tune-wide49-{1,2,3}.log,
# archived into $OUT/s49d.tgz.  (The committed logs come from this script at 1c86666, which
# listed the registers in round 1 only.)
#   OUT=out bash bench/gpu_s49d.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
ROUNDS=3 TUNE_DTYPE=fp32 T_TUNE=170 TUNE_ARGS=--regs gpu_tune_rounds wide49 \
  "default,fwd wide256,fwd wide256 w8" fwd,fwd_bwd
gpu_archive s49d
ls -la "$OUT"
