#!/usr/bin/env bash
# Session 8, third call: the cuda_ext cLN tests on one-pass producer statistics (the streaming
# forward), then an A/B of the forward's statistics in one call: NORMK_CLN_DIAG=-1 selects the
# two-pass statistics it replaces (outputs correct: an experiment switch), alternated twice.
#   OUT=out bash bench/gpu_s8c.sh
# Run at commit ad616ba (the experiment); the one-pass statistics and the switch were removed after
# it (slower, NOTES 11), so on later commits both halves of the A/B time the same kernel.
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-100} python3 -m pytest -q tests/test_cuda_ext_paths.py tests/test_cln.py \
  --backend cuda_ext -k "not rmsnorm" > "$OUT/test-cln.log" 2>&1
echo "cln tests rc=$?"; tail -2 "$OUT/test-cln.log"
for rep in 1 2; do
  for stats in two-pass one-pass; do
    d=0; [ $stats = two-pass ] && d=-1
    NORMK_CLN_DIAG=$d timeout -s KILL ${T_CLN:-45} python3 -m bench.tune --backend cuda_ext \
      --ops cln --quick --parts shapes > "$OUT/ab-$stats-$rep.log" 2>&1
    echo "== $stats ($rep)"; cat "$OUT/ab-$stats-$rep.log"
  done
done
