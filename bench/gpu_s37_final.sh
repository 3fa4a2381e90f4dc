#!/usr/bin/env bash
# Session 37's final calls on the final code (the warp-tile forward removed; every kernel source
# as at d11eda2), in two calls, each within the 600-s limit:
#   OUT=out bash bench/gpu_s37_final.sh tests   # make test-all, the whole suite, 4 xdist workers
#   OUT=out bash bench/gpu_s37_final.sh cln     # the cLN benchmark with its peers (the README's
#                                               # cLN table), on the machine still warm
set -uo pipefail
source bench/gpu_env.sh
case "${1:-}" in
  tests)
    # As run: --durations=30 and the log's last 3 lines printed (gpu_tests_call prints 40).
    gpu_tests_call s37-final-tests 450 ;;
  cln)
    gpu_bench_cln 300
    gpu_archive s37-final-cln-peers ;;
  *) echo "usage: $0 tests|cln" >&2; exit 2 ;;
esac
ls -la "$OUT"
