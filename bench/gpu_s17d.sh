#!/usr/bin/env bash
# Session 17, extra call: the Triton forward's tile aggregate from one reduction published before
# the in-tile scan (CLN_FWD_REDUCE_AGGREGATE, on in this call) against the scan's last element
# (off, the code of the session's final runs): cLN target shapes and the seed (bench.tune), then
# the Triton cLN GPU tests on the new default.
#   OUT=out bash bench/gpu_s17d.sh   (ran at e33384b; the reduction was then removed: NOTES 20.3b)
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_TUNE:-120} python3 -m bench.tune --backend triton --ops cln --parts shapes,seed \
  --variants "default,fwd scan aggregate" > "$OUT/tune-agg.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-agg.log"
timeout -s KILL ${T_TESTS:-170} python3 -m pytest -q -p no:cacheprovider \
  tests/test_cln.py tests/test_triton_paths.py -k "triton or schedule or pairs" \
  > "$OUT/test-triton.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton.log"
