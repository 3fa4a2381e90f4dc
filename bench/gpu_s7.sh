#!/usr/bin/env bash
# Session 7, first GPU call: the cuda_ext hold forward (include/cln_hold.cuh).  Builds, runs
# the cuda_ext cLN path tests (every kernel family forced, on the GPU), then sweeps the cLN
# knobs (bench.tune: hold PPR, group size, the streaming forward for comparison) at the issue
# shapes, the seed shape and one long sequence.
#   OUT=out bash bench/gpu_s7.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q -x tests/test_cuda_ext_paths.py \
  -k "not rmsnorm" > "$OUT/test-paths.log" 2>&1
echo "path tests rc=$?"; tail -3 "$OUT/test-paths.log"
timeout -s KILL ${T_TUNE:-240} python3 -m bench.tune --backend cuda_ext --ops cln \
  > "$OUT/tune-cln.log" 2>&1; cat "$OUT/tune-cln.log"
