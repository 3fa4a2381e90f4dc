#!/usr/bin/env bash
# Session 49: the README's test command as a user runs it on a GPU machine, `make test`, which
# now spreads the tests over up to 4 pytest-xdist processes (TEST_JOBS; the CPU emulator self-test
# included, as there), with the placement tests dry-run on this one GPU; then, in a second call,
# the README's main job on the same code.  Archived into $OUT/s49-test.tgz / $OUT/s49-main.tgz.
#   OUT=out bash bench/gpu_s49.sh test
#   OUT=out bash bench/gpu_s49.sh main
set -uo pipefail
case "${1:-}" in
  test)
    source bench/gpu_env.sh
    gpu_make_test 440
    gpu_archive s49-test
    ;;
  main)
    source bench/gpu_env.sh
    T_BENCH=330 gpu_main_job s49-main
    ;;
  *) echo "usage: $0 test|main" >&2; exit 2 ;;
esac
ls -la "$OUT"
