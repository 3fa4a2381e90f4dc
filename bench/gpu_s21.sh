#!/usr/bin/env bash
# Session 21: the cLN forward tests whose tolerance is now conditioned on each frame (the planted
# ill-conditioned frame, random-split streaming, forward, DC offset), every backend on the GPU.
#   OUT=out bash bench/gpu_s21.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q -rs -p no:cacheprovider $(gpu_xdist_args) \
  tests/test_cln.py -k "conditioned or streaming or forward or dc_offset" \
  > "$OUT/test-cln-conditioned.log" 2>&1
echo "test_cln conditioned rc=$?"; tail -8 "$OUT/test-cln-conditioned.log"
