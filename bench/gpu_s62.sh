#!/usr/bin/env bash
# Session 62's GPU calls (NOTES 61), run with main's tree before the change unpacked into
# ab_old/ (untracked, so it travels):
#   mkdir ab_old && git archive <rev> | tar -x -C ab_old --exclude=bench/results && echo <rev> > ab_old/REV
# Modes:
#   check: any card. Both extensions built at once; this tree's cuda_ext cLN tests on the GPU
#          (tests/test_cuda_ext_paths.py, with the new test_backward_partials_workspace, and
#          tests/test_cln.py --backend cuda_ext); then bench.tune's default cuda_ext fwd+bwd,
#          fp32 and bf16, at the three target shapes, alternated old / new / old / new (the
#          backward's workspace sized to the streaming grid's rows of partials against a row
#          per tile: the kernels are the same, so no change is expected beyond the rounds'
#          spread).
#   verify: any card. The rewritten negative control of the frame shift
#          (test_frame_shift_is_what_keeps_the_first_frames_exact) three times, then the
#          README's `make test` on the GPU machine ($OUT/make-test.log).
#   main:  H200 only (the card the issues' targets name): the README's main job (make bench
#          at the target shapes, every backend and peer, the plots) on this tree.
#   (cuda_ext's forward families under a DC offset on the H200 ran as `bash bench/gpu_s60.sh dc`.)
#   ncu:   H200 only: gpu_s60b.sh's profiles cut to bf16 at (16, 512, 4000) and (4, 256, 16000),
#          levels 0 and 3, without the long-scoreboard metric, into $OUT/ncu62.txt (42 s).
#   OUT=out bash bench/gpu_s62.sh check|verify|main|ncu
set -uo pipefail
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $card"
h200() { grep -q H200 <<<"$card" || { echo "not an H200: nothing run"; exit 3; }; }
case "${1:-}" in
  check)
    [ -f ab_old/REV ] || { echo "ab_old/ missing (see the header)"; exit 2; }
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    gpu_cuda_ext_ab ab62 test-check 170
    gpu_archive s62-check
    ;;
  verify)
    source bench/gpu_env.sh
    for r in 1 2 3; do
      timeout -s KILL 60 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_ext_paths.py \
        -k frame_shift > "$OUT/test-shift-$r.log" 2>&1
      echo "shift control round $r rc=$?"; tail -1 "$OUT/test-shift-$r.log"
    done
    gpu_make_test 420
    gpu_archive s62-verify
    ;;
  main)
    h200
    source bench/gpu_env.sh
    gpu_make_bench 540
    gpu_archive s62-main
    ;;
  ncu)
    h200
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh >/dev/null
    gpu_ncu_bf16_levels ncu62 "0 3"
    ;;
  *) echo "usage: $0 check|verify|main|ncu" >&2; exit 2 ;;
esac
