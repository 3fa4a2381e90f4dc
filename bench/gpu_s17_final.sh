#!/usr/bin/env bash
# Session 17, final calls on the final code (dgamma / dbeta partials after the group's closing):
#   OUT=out bash bench/gpu_s17_final.sh tests   make test-all (every backend, every test)
#   OUT=out bash bench/gpu_s17_final.sh bench   cLN with its peers (both backends, eager,
#                                               torch.compile), then the same-size copies and
#                                               the long sequence
set -uo pipefail
case "${1:-}" in
  tests) source bench/gpu_env.sh; T_TESTS=${T_TESTS:-500} gpu_test_all ;;
  bench) source bench/gpu_env.sh; gpu_bench_cln 200; gpu_copy_long 100 ;;
  *) echo "usage: $0 tests|bench" >&2; exit 2 ;;
esac
