#!/usr/bin/env bash
# Session 10, second call: the cuda_ext streaming backward with the dgamma / dbeta partials
# computed by the producer warps (they were the output warps'), and an experiment on the
# ring's first fill (NORMK_CLN_STAGGER=1: the later stages' first copies once the first tile
# has landed).  A = commit 4ea553f's code in exp_a/ (bench/gpu_ab.sh), B = this tree; B's
# cLN tests with either fill, then A, B, B + stagger alternated twice.
#   rm -rf exp_a && mkdir exp_a && git archive 4ea553f backends common bench | tar -x -C exp_a
#   OUT=out bash bench/gpu_s10b.sh
# Run it at commit b6254c6: NORMK_CLN_STAGGER was removed after this A/B (at later commits the
# switch is ignored and the two sides run the same code).
set -uo pipefail
source bench/gpu_ab.sh
ab_setup
ab_tests tests/test_cuda_ext_paths.py tests/test_cln.py --backend cuda_ext
NORMK_CLN_STAGGER=1 PYTHONPATH=/tmp/site:$PWD timeout -s KILL 120 python3 -m pytest -q \
  tests/test_cuda_ext_paths.py tests/test_cln.py --backend cuda_ext > "$OUT/test-cln-stagger.log" 2>&1
echo "cln tests (stagger) rc=$?"; tail -n 2 "$OUT/test-cln-stagger.log"
for rep in 1 2; do
  for v in a b c; do
    dir=$PWD; [ $v = a ] && dir=$PWD/exp_a
    st=0; [ $v = c ] && st=1
    (cd "$dir" && NORMK_CLN_STAGGER=$st PYTHONPATH=/tmp/site:$dir timeout -s KILL 60 \
      python3 -m bench.tune --backend cuda_ext --ops cln --quick --parts shapes,long) \
      > "$OUT/ab-$v-$rep.log" 2>&1
    echo "== $v ($rep)"; cat "$OUT/ab-$v-$rep.log"
  done
done
