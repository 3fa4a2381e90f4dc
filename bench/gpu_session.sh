#!/usr/bin/env bash
# One call on the GPU machine: tests of every backend on the GPU, then the benchmark.
#   bash bench/gpu_session.sh            # make test-all && make bench (targets, fp32+bf16)
#   BENCH_ARGS="..." bash bench/gpu_session.sh
# Logs and results go to $OUT (the device tool brings them back), else ./out.
set -uo pipefail
source bench/gpu_env.sh
set -o pipefail
timeout ${TEST_TIMEOUT:-330} make test-all PY=python3 PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-}" 2>&1 | tee "$OUT/test.log" | tail -15
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
