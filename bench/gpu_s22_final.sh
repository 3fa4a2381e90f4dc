#!/usr/bin/env bash
# Session 22, the final calls on the final code (the Triton forward's first wave staggered):
#   OUT=out bash bench/gpu_s22_final.sh tests   make test-all (xdist where .whl/ has it)
#   OUT=out bash bench/gpu_s22_final.sh all     tests, then the cLN benchmark with its peers
#   OUT=out bash bench/gpu_s22_final.sh bench   the cLN benchmark with its peers (the README's
#       cLN table), then the README's main job (make bench at the target shapes, every backend
#       and peer, plots), all in one archive (a call returns at most 8 files)
set -uo pipefail
source bench/gpu_env.sh
case "${1:-bench}" in
  bench)
    gpu_final_bench s22-final
    ;;
  tests)
    T_TESTS=${T_TESTS:-400} gpu_test_all
    ;;
  all)  # make test-all, then the cLN benchmark with its peers, one archive
    T_TESTS=${T_TESTS:-300} gpu_test_all
    gpu_bench_cln 150
    tar czf /tmp/s22-all.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/s22-all.tgz "$OUT/"
    ;;
esac
