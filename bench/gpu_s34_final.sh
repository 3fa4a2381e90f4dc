#!/usr/bin/env bash
# Session 34's final calls on the final code, in two calls (each within the 600-s limit):
#   OUT=out bash bench/gpu_s34_final.sh tests   # make test-all, the whole suite (540-s limit)
#   OUT=out bash bench/gpu_s34_final.sh bench   # the cLN benchmark with its peers (the README's
#                                               # cLN table), then the README's main job
# (session 33's one call of both was killed during make test-all at its 300-s limit).
# (As run, the script also printed `git log -1`: the device's copy showed the session's start
# commit, not the tree it ran, so the line went.)
set -uo pipefail
source bench/gpu_env.sh
case "${1:-}" in
  tests)
    T_TESTS=${T_TESTS:-540} gpu_test_all
    gpu_archive s34-final-tests ;;
  bench)
    gpu_bench_cln 170
    gpu_make_bench 300
    gpu_archive s34-final-bench ;;
  *) echo "usage: $0 tests|bench" >&2; exit 2 ;;
esac
ls -la "$OUT"
