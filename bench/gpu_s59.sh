#!/usr/bin/env bash
# Session 59's GPU calls (NOTES 58), chained on one warm machine:
#   tests: the README's `make test` on the GPU (cuda_ext build first) into $OUT/make-test.log,
#          then bench.probe_dc_first_frames (each backend's float32 forward under a DC offset in
#          the frames with little history, against the harness's tolerance) into $OUT/dc.log.
#   ab:    the float32 forward with and without the first C frames' shift (CLN_FWD_SHIFT, both
#          backends), bench.tune's variants default / noshift side by side at the three target
#          shapes and the seed, two rounds (separate processes) into $OUT/ab-shift-{1,2}.log.
#   first: the changed code's GPU tests (cLN harness, path tests, negative controls), the DC
#          probe and one A/B round in one call (for little device time left).
#   check: after first, the fixed GPU shift test and the DC probe with the shift off.
#   abmain: ab (ROUNDS rounds, default 2, each within T_AB s), then the main job in what is left
#          of 580 s.
#   main:  the README's main job (make bench at the target shapes, every backend and peer).
#   OUT=out bash bench/gpu_s59.sh first|check|tests|ab|abmain|main
set -uo pipefail
case "${1:-}" in
  tests)
    source bench/gpu_env.sh
    gpu_make_test 420
    timeout -s KILL 90 python3 -m bench.probe_dc_first_frames > "$OUT/dc.log" 2>&1
    echo "dc probe rc=$?"; cat "$OUT/dc.log"
    gpu_archive s59-tests
    ;;
  first)
    # The changed code's GPU tests (the cLN harness on every backend, the Triton and cuda_ext
    # path tests, the negative controls) into $OUT/test-first.log, the DC probe, then one
    # round of the A/B: for a call when little device time is left.
    t0=$(date +%s)
    source bench/gpu_env.sh
    timeout -s KILL 260 python3 -m pytest -q -p no:cacheprovider $(gpu_xdist_args) \
      tests/test_cln.py tests/test_triton_paths.py tests/test_cuda_ext_paths.py \
      tests/test_negative_controls.py > "$OUT/test-first.log" 2>&1
    echo "tests rc=$? at $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/test-first.log"
    grep -E "FAILED|ERROR" "$OUT/test-first.log" | head
    timeout -s KILL 60 python3 -m bench.probe_dc_first_frames > "$OUT/dc.log" 2>&1
    echo "dc probe rc=$?"; cat "$OUT/dc.log"
    timeout -s KILL $(( 570 - ($(date +%s) - t0) )) python3 -m bench.tune --backend triton,cuda_ext \
      --ops cln --parts shapes,seed --modes fwd --seed-modes fwd --variants default,noshift \
      --dtype fp32 > "$OUT/ab-shift-1.log" 2>&1
    echo "ab rc=$? at $(( $(date +%s) - t0 )) s"; head -2 "$OUT/ab-shift-1.log"
    grep -h " cln " "$OUT/ab-shift-1.log"
    gpu_archive s59-first
    ;;
  check)
    # After `first`: its one failure's fix (test_frame_shift_... on the GPU) and the DC probe
    # with the shift off (what the first frames lose on the GPU without it) into
    # $OUT/test-check.log and $OUT/dc-noshift.log.
    source bench/gpu_env.sh
    gpu_shift_check
    gpu_archive s59-check
    ;;
  ab|abmain)
    t0=$(date +%s)
    source bench/gpu_env.sh
    for r in $(seq 1 "${ROUNDS:-2}"); do
      timeout -s KILL "${T_AB:-200}" python3 -m bench.tune --backend triton,cuda_ext --ops cln \
        --parts shapes,seed --modes fwd --seed-modes fwd --variants default,noshift \
        --dtype fp32 > "$OUT/ab-shift-$r.log" 2>&1
      echo "round $r rc=$? at $(( $(date +%s) - t0 )) s"
    done
    head -2 "$OUT/ab-shift-1.log"
    grep -h " cln " "$OUT"/ab-shift-*.log | sort -k1,1 -k3,6 -s
    # abmain: then the README's main job, in what is left of the call's 600 s.
    if [ "$1" = abmain ]; then gpu_make_bench $(( 580 - ($(date +%s) - t0) )); fi
    gpu_archive "s59-$1"
    ;;
  main)
    source bench/gpu_env.sh
    gpu_make_bench 420
    gpu_archive s59-main
    ;;
  *) echo "usage: $0 first|check|tests|ab|abmain|main" >&2; exit 2 ;;
esac
