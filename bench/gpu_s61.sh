#!/usr/bin/env bash
# Session 61's GPU calls (NOTES 60), run from branch cuda-ext-block-partials (merged since) with main's tree
# unpacked into ab_old/ (untracked, so it travels):
#   mkdir ab_old && git archive main | tar -x -C ab_old --exclude=bench/results && git rev-parse --short main > ab_old/REV
# Modes:
#   h200: runs nothing unless the card is an H200 (the card the issues' targets name). In
#         ab_old/ (main's code): cuda_ext's forward families under a DC offset and the shift's
#         GPU negative control (as gpu_s60.sh dc), then the README's main job (make bench at
#         the target shapes, every backend and peer, the plots).
#   ab:   any card. Both extensions built at once; this tree's cuda_ext cLN tests on the GPU
#         (tests/test_cuda_ext_paths.py, tests/test_cln.py --backend cuda_ext); then bench.tune's
#         default cuda_ext fwd+bwd, fp32 and bf16, at the three target shapes, alternated
#         old / new / old / new (the per-block dgamma / dbeta partials against main, NOTES 53.4).
#   auto: h200 where the card is an H200, else ab.
#   OUT=out bash bench/gpu_s61.sh h200|ab|auto
set -uo pipefail
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $card"
mode=${1:-}
if [ "$mode" = auto ]; then
  if grep -q H200 <<<"$card"; then mode=h200; else mode=ab; fi
fi
[ -f ab_old/REV ] || { echo "ab_old/ missing (see the header)"; exit 2; }
case "$mode" in
  h200)
    grep -q H200 <<<"$card" || { echo "not an H200: nothing run"; exit 3; }
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    gpu_build_tree ab_old
    gpu_in_tree ab_old timeout -s KILL 150 python3 -m pytest -v -p no:cacheprovider \
      tests/test_cuda_ext_paths.py tests/test_cln.py -k "dc_offset or frame_shift" \
      > "$OUT/test-dc.log" 2>&1
    echo "dc tests (main $(cat ab_old/REV)) rc=$?"; tail -2 "$OUT/test-dc.log"
    OUT=$OUT gpu_in_tree ab_old bash -c "source bench/gpu_env.sh >/dev/null; gpu_make_bench 330"
    gpu_archive s61-h200
    ;;
  ab)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    gpu_cuda_ext_ab ab61 test-ab 150
    gpu_archive s61-ab
    ;;
  *) echo "usage: $0 h200|ab|auto" >&2; exit 2 ;;
esac
