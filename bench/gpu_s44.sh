#!/usr/bin/env bash
# Session 44's first call, with CLN_FWD_ALONE_AFFINE_EARLY on by default: the GPU tests of the
# forward alone (bitwise the training forward's output and state at (4, 128, 32768), where the
# fp32 forward alone is paced and now reads gamma / beta before its wait) and of the early
# reads; then two rounds each of bench.tune's forward (no statistics, torch.no_grad):
#   fp32: the pace around its 6000 GB/s now that the affine reads come early;
#   bf16: the fp32 forward alone's two changes tried on 16-bit tiles (a pace, which with
#         CLN_FWD_ALONE_AFFINE_EARLY brings the early reads; the early reads alone, unpaced).
# Archived into $OUT/s44.tgz.
#   OUT=out bash bench/gpu_s44.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 90 python3 -m pytest -q tests/test_triton_paths.py tests/test_cln.py --backend triton \
  -k "affine_early or forward_alone_matches" > "$OUT/test-alone44.log" 2>&1
echo "tests rc=$?"; tail -2 "$OUT/test-alone44.log"
T_TUNE=60 TUNE_DTYPE=fp32 gpu_tune_rounds alone44 "default,alone pace 5500,alone pace 6500,alone affine late" fwd
T_TUNE=90 TUNE_DTYPE=bf16 gpu_tune_rounds bf16alone44 "default,fwd affine early,pace 6000,pace 8000,pace 10000" fwd
gpu_archive s44
