#!/usr/bin/env bash
# Session 50's final calls, on the code with the paced forward in groups of two sequences
# (CLN_FWD_PACED_SEQ_GROUP = 2).  `tests`: the README's `make test` on the GPU (4 pytest-xdist
# processes; the placement tests dry-run on this one GPU) into $OUT/make-test.log, then two
# rounds, in separate processes, of bench.tune's fp32 forward alone: the default against the
# paced forward with all sequences interleaved (the old default) and in groups of 1 / 3, into
# $OUT/tune-paced50-{1,2}.log; archived into $OUT/s50g-test.tgz.  `main`: the README's main job,
# archived into $OUT/s50g-main.tgz.
#   OUT=out bash bench/gpu_s50g.sh tests
#   OUT=out bash bench/gpu_s50g.sh main
set -uo pipefail
case "${1:-}" in
  tests)
    source bench/gpu_env.sh
    gpu_make_test 330
    TUNE_DTYPE=fp32 T_TUNE=80 gpu_tune_rounds paced50 \
      "default,paced seqg all,paced seqg1,paced seqg3" fwd
    gpu_archive s50g-test
    ;;
  main)
    source bench/gpu_env.sh
    T_BENCH=330 gpu_main_job s50g-main
    ;;
  *) echo "usage: $0 tests|main" >&2; exit 2 ;;
esac
ls -la "$OUT"
