#!/usr/bin/env bash
# Session 45's first call: the paced fp32 forward alone with only its first 1 / 2 / 4 waves of
# programs waiting for their start time (CLN_FWD_PACE_WAVES; the later programs skip the stamp's
# L2 round trip before their first tile load). Its GPU path tests (bitwise the unpaced output),
# two rounds of bench.tune's forward (torch.no_grad) at the fp32 targets, then where the
# forward alone's time goes on the current code (bench.ablate_cln's levels at the three target
# shapes, fp32 and bf16). Archived into $OUT/s45.tgz.
# Ran at 8529d37 (session 45): the knob lost at every wave count and was removed again
# (NOTES 46.1); its variants are not in bench.tune after that commit.
#   OUT=out bash bench/gpu_s45.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 120 python3 -m pytest -q tests/test_triton_paths.py -k "pace" \
  > "$OUT/test-pace45.log" 2>&1
echo "tests rc=$?"; tail -2 "$OUT/test-pace45.log"
T_TUNE=100 TUNE_DTYPE=fp32 gpu_tune_rounds waves45 "default,pace waves1,pace waves2,pace waves4" fwd
timeout -s KILL 240 python3 -m bench.ablate_cln --no-runs \
  --shapes 16x512x4000,4x256x16000,2x128x64000 > "$OUT/ablate45.log" 2>&1
echo "ablate rc=$?"; cat "$OUT/ablate45.log"
gpu_archive s45
