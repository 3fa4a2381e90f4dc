#!/usr/bin/env bash
# One call on the GPU machine: tests of every backend on the GPU, then the benchmark.
#   bash bench/gpu_session.sh            # make test-all && make bench (targets, fp32+bf16)
#   BENCH_ARGS="..." bash bench/gpu_session.sh
# Logs and results go to $OUT (the device tool brings them back), else ./out.
set -uo pipefail
source bench/gpu_env.sh
# make test-all into $OUT/test-all.log, in 4 pytest-xdist processes where .whl/ carries
# pytest-xdist (a cold machine's serial run takes over 360 s, most of it compiling Triton kernels).
T_TESTS=${TEST_TIMEOUT:-400} gpu_test_all
rc=$?
BENCH_ARGS=${BENCH_ARGS:---shapes targets --dtype fp32,bf16 --mode fwd,fwd_bwd --plot --cuda-graph all}
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  timeout ${BENCH_TIMEOUT:-400} make bench PY=python3 BENCH_ARGS="$BENCH_ARGS" > "$OUT/bench.log" 2>&1
  rc=$(( rc | $? ))
  tail -5 "$OUT/bench.log"
  # At most 8 files come back from $OUT: copy the result files of this run only.
  for f in bench/results/${RESULTS_GLOB:-*}.{json,md,png}; do
    [ -e "$f" ] && cp "$f" "$OUT/"
  done
fi
exit $rc
