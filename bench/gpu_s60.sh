#!/usr/bin/env bash
# Session 60's GPU calls (NOTES 59), chained on one warm machine (it is let go 30 s idle):
#   verify: session 59's fixed GPU shift test and the DC probe with the shift off
#           ($OUT/test-check.log, $OUT/dc-noshift.log), then the README's `make test` on the
#           GPU ($OUT/make-test.log) and the DC probe with the shift ($OUT/dc.log).
#   main:   the README's main job (make bench at the target shapes, every backend and peer,
#           the plots) into $OUT.
#   dc:     cuda_ext's forward families forced at frames with little history under a DC offset,
#           and its GPU negative control of the shift (tests/test_cuda_ext_paths.py -k "dc_offset
#           or frame_shift"), with test_cln's DC tests on every backend, into $OUT/test-dc.log.
#   OUT=out bash bench/gpu_s60.sh verify|main|dc
set -uo pipefail
case "${1:-}" in
  verify)
    t0=$(date +%s)
    source bench/gpu_env.sh
    gpu_shift_check
    gpu_make_test $(( 530 - ($(date +%s) - t0) ))
    timeout -s KILL 50 python3 -m bench.probe_dc_first_frames > "$OUT/dc.log" 2>&1
    echo "dc probe rc=$? at $(( $(date +%s) - t0 )) s"; cat "$OUT/dc.log"
    gpu_archive s60-verify
    ;;
  main)
    source bench/gpu_env.sh
    gpu_make_bench 540
    gpu_archive s60-main
    ;;
  dc)
    source bench/gpu_env.sh
    timeout -s KILL 200 python3 -m pytest -v -p no:cacheprovider tests/test_cuda_ext_paths.py \
      tests/test_cln.py -k "dc_offset or frame_shift" > "$OUT/test-dc.log" 2>&1
    echo "tests rc=$?"; grep -E "PASSED|FAILED|SKIPPED|ERROR" "$OUT/test-dc.log" | sed "s/ *\[ *[0-9]*%\]//"
    tail -3 "$OUT/test-dc.log"
    gpu_archive s60-dc
    ;;
  *) echo "usage: $0 verify|main|dc" >&2; exit 2 ;;
esac
