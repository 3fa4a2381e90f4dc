#!/usr/bin/env bash
# Session 35's calls, each within the 600-s limit:
#   OUT=out bash bench/gpu_s35.sh tests   # make test-all, the whole suite, verbose, in 4 xdist
#                                         # processes (490-s limit, 300 s a test; sessions 33, 34 never
#                                         # finished it, NOTES 35.4)
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s35.sh main
#                                         # the README's main job (make bench, targets, plots);
#                                         # the extension is built by its first cuda_ext case
#   OUT=out bash bench/gpu_s35.sh cln     # the cLN benchmark with its peers (the README's cLN
#                                         # table); as run, on the machine still warm from main
#                                         # (its extension build cached): `source
#                                         # bench/gpu_env.sh; gpu_bench_cln 200; gpu_archive
#                                         # s35-cln-peers`
set -uo pipefail
source bench/gpu_env.sh
case "${1:-}" in
  tests)
    gpu_tests_call s35-tests 490 ;;
  main)
    gpu_make_bench 420
    gpu_archive s35-main ;;
  cln)
    gpu_bench_cln 200
    gpu_archive s35-cln-peers ;;
  *) echo "usage: $0 tests|main|cln" >&2; exit 2 ;;
esac
ls -la "$OUT"
