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
    t0=$(date +%s)
    XDIST=${XDIST:-4} T_TESTS=${T_TESTS:-450} TEST_ARGS="-vv --durations=30 --timeout=300" gpu_test_all
    echo "tests: $(( $(date +%s) - t0 )) s"
    grep -E "FAILED|ERROR" "$OUT/test-all.log" | head -20
    tail -3 "$OUT/test-all.log"
    gpu_archive s37-final-tests ;;
  cln)
    gpu_bench_cln 300
    gpu_archive s37-final-cln-peers ;;
  *) echo "usage: $0 tests|cln" >&2; exit 2 ;;
esac
ls -la "$OUT"
