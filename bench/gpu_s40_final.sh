#!/usr/bin/env bash
# Session 40's final calls on the final code (cuda_ext CLN_PREFIX_SPIN = 1), each within the 600-s
# limit, on one warm machine:
#   OUT=out bash bench/gpu_s40_final.sh tests   # make test-all, the whole suite, 4 xdist workers
#   OUT=out bash bench/gpu_s40_final.sh bench   # the cLN benchmark with its peers (the README's
#                                               # cLN table), then the README's main job
#                                               # (make bench, every backend and peer, plots)
set -uo pipefail
source bench/gpu_env.sh
case "${1:-}" in
  tests)
    gpu_tests_call s40-final-tests 450 ;;
  bench)
    gpu_bench_cln 200
    gpu_make_bench 300
    gpu_archive s40-final-bench ;;
  *) echo "usage: $0 tests|bench" >&2; exit 2 ;;
esac
ls -la "$OUT"
