#!/usr/bin/env bash
# Session 10, first call: tiles by ticket in the cuda_ext streaming cLN kernels
# (NORMK_CLN_SCHED=1) against the fixed schedule (block b takes tiles b, b + grid, ...).
# The path tests with tickets on, the two schedules alternated twice (fwd, fwd+bwd at the
# target and long shapes), the diagnostic levels of both.
#   OUT=out bash bench/gpu_s10.sh
set -uo pipefail
source bench/gpu_env.sh
NORMK_CLN_SCHED=1 timeout -s KILL 120 python3 -m pytest -q tests/test_cuda_ext_paths.py \
  tests/test_cln.py --backend cuda_ext > "$OUT/test-cln-sched1.log" 2>&1
echo "cln tests (tickets) rc=$?"; tail -n 2 "$OUT/test-cln-sched1.log"
for rep in 1 2; do
  for s in 0 1; do
    NORMK_CLN_SCHED=$s timeout -s KILL 60 python3 -m bench.tune --backend cuda_ext --ops cln \
      --quick --parts shapes,long > "$OUT/ab-sched$s-$rep.log" 2>&1
    echo "== sched $s ($rep)"; cat "$OUT/ab-sched$s-$rep.log"
  done
done
timeout -s KILL 90 python3 -m bench.diag_cln_stream > "$OUT/diag-stream.log" 2>&1
cat "$OUT/diag-stream.log"
