#!/usr/bin/env bash
# Session 9, third call: A/B of the cross-tile prefix with the group prefix's load issued
# together with the tile words' loads (B, the working tree) against one after the other (A:
# exp_a/ = `git archive 6bc2345 backends common bench`).  Both extensions built side by side
# (bench/gpu_ab.sh); B's cLN tests; B's diagnostic levels; bench.tune --quick alternating
# A, B, A, B.
#   OUT=out bash bench/gpu_s9c.sh
set -uo pipefail
source bench/gpu_ab.sh
ab_setup
ab_tests tests/test_cuda_ext_paths.py tests/test_cln.py --backend cuda_ext
PYTHONPATH=/tmp/site:$PWD timeout -s KILL 80 python3 -m bench.diag_cln_stream \
  > "$OUT/diag-stream.log" 2>&1; cat "$OUT/diag-stream.log"
ab_tune --backend cuda_ext --ops cln --quick --parts shapes,long
