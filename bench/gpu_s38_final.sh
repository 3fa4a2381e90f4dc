#!/usr/bin/env bash
# Session 38's final calls on the final code (CLN_FWD_PREFIX_MERGED on), each within the 600-s
# limit, on one warm machine:
#   OUT=out bash bench/gpu_s38_final.sh tests   # make test-all, the whole suite, 4 xdist workers
#   OUT=out bash bench/gpu_s38_final.sh cln     # the cLN benchmark with its peers (the README's
#                                               # cLN table), then the forward's prefix merged
#                                               # against unmerged again (two bench.tune rounds)
#   OUT=out bash bench/gpu_s38_final.sh main    # the README's main job (make bench, plots)
set -uo pipefail
source bench/gpu_env.sh
case "${1:-}" in
  tests)
    gpu_tests_call s38-final-tests 450 ;;
  cln)
    gpu_bench_cln 300
    T_TUNE=${T_TUNE:-100} gpu_tune_rounds merged38final "default,fwd unmerged" fwd,fwd_bwd
    gpu_archive s38-final-cln-peers ;;
  main)
    gpu_main_job s38-final-main ;;
  *) echo "usage: $0 tests|cln|main" >&2; exit 2 ;;
esac
ls -la "$OUT"
