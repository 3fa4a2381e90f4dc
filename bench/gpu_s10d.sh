#!/usr/bin/env bash
# Session 10, last call: the forward with the backward's wide roles (512 threads: 8 producer,
# 7 output warps) where its ring leaves room for one block per SM (NORMK_CLN_FWD_WIDE=1; the
# 256-thread kernel otherwise), against the 256-thread kernel, in one build: the cLN tests
# with it on, then the two alternated twice.
#   OUT=out bash bench/gpu_s10d.sh
# Run it at commit 41b7cb4: NORMK_CLN_FWD_WIDE was removed after this A/B (at later commits the
# switch is ignored and the two sides run the same code).
set -uo pipefail
source bench/gpu_env.sh
NORMK_CLN_FWD_WIDE=1 timeout -s KILL 90 python3 -m pytest -q tests/test_cuda_ext_paths.py \
  tests/test_cln.py --backend cuda_ext > "$OUT/test-cln-fwd-wide.log" 2>&1
echo "cln tests (wide forward) rc=$?"; tail -n 2 "$OUT/test-cln-fwd-wide.log"
for rep in 1 2; do
  for w in 0 1; do
    NORMK_CLN_FWD_WIDE=$w timeout -s KILL 45 python3 -m bench.tune --backend cuda_ext --ops cln \
      --quick --parts shapes > "$OUT/ab-wide$w-$rep.log" 2>&1
    echo "== wide $w ($rep)"; cat "$OUT/ab-wide$w-$rep.log"
  done
done
