#!/usr/bin/env bash
# Session 23, the final calls on the final code (the kernels of d1e0826):
#   OUT=out bash bench/gpu_s23_final.sh tests   make test-all (xdist where .whl/ has it)
#   OUT=out bash bench/gpu_s23_final.sh all     tests, then the cLN benchmark with its peers
#   OUT=out bash bench/gpu_s23_final.sh bench   the cLN benchmark with its peers (the README's
#       cLN table), then the README's main job (make bench at the target shapes, every backend
#       and peer, plots), all in one archive (a call returns at most 8 files)
set -uo pipefail
source bench/gpu_env.sh
case "${1:-bench}" in
  bench)
    gpu_final_bench s23-final
    ;;
  tests)
    T_TESTS=${T_TESTS:-400} gpu_test_all
    ;;
  all)  # make test-all, then the cLN benchmark with its peers, one archive
    T_TESTS=${T_TESTS:-300} gpu_test_all
    gpu_bench_cln 150
    tar czf /tmp/s23-all.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/s23-all.tgz "$OUT/"
    ;;
esac
