#!/usr/bin/env bash
# Session 17, second call: the Triton backward's dgamma / dbeta partials formed after the tile's
# publication (CLN_BWD_LATE_PARTIALS = 1, off the look-back's chain) against before it (0, the
# code up to session 16) and after the group's closing (2): the cLN target shapes twice in one
# run (bench.tune), then the Triton GPU tests.
#   OUT=out bash bench/gpu_s17b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend triton --ops cln --parts shapes \
  --variants "default,early partials,partials after close,default,early partials" \
  > "$OUT/tune-late.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-late.log"
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q -p no:cacheprovider \
  tests/test_cln.py tests/test_triton_paths.py tests/test_triton_compile.py -k "triton or partials or colsum" \
  > "$OUT/test-triton.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton.log"
