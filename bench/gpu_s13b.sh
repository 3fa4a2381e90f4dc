#!/usr/bin/env bash
# Session 13, second experiment: the Triton cLN prefix words loaded together and waited for in
# one L2 round trip (CLN_PREFIX_OVERLAP, the default) against one load after another; the
# Triton cLN tests on the GPU first, then the A/B twice in one call, then the cLN benchmark of
# both compiled backends with their peers and the long sequence
# (bench/results/nvidia-h200-s13b-*; NOTES 16.5).  Ran at 5257505; the forward's half of the
# change was reverted after it (the knob now covers the backward only).
#   OUT=out bash bench/gpu_s13b.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q tests \
  -k "(triton or pairs or schedule) and not rmsnorm" > "$OUT/test-triton-cln.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton-cln.log"
for r in 1 2; do
  timeout -s KILL ${T_TUNE:-75} python3 -m bench.tune --backend triton --ops cln \
    --parts shapes --variants "default,sequential prefix" > "$OUT/ab-overlap-$r.log" 2>&1
  echo "round $r rc=$?"; cat "$OUT/ab-overlap-$r.log"
done
gpu_bench_cln 130
gpu_copy_long 60
