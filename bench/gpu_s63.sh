#!/usr/bin/env bash
# Session 63's GPU calls (NOTES 62), run with main's tree before the change unpacked into
# ab_old/ (untracked, so it travels):
#   mkdir ab_old && git archive <rev> | tar -x -C ab_old --exclude=bench/results && echo <rev> > ab_old/REV
# Ran (NOTES 62): ab with ab_old = main at de87c58 and this tree = the branch
# cuda-ext-early-prefix (aa838cf); ncu on main. Both on an H100. (The two builds and ncu's
# profiles ran inline; they now live in gpu_env.sh's gpu_build_ab and gpu_ncu_bf16_levels, the
# same commands, shared with gpu_cuda_ext_ab and gpu_s62.sh.)
# Modes:
#   ab:  any card (the figures name it). Both extensions built at once; bench.tune's default
#        cuda_ext cLN, fwd and fwd+bwd, fp32 and bf16, at the three target shapes, alternated
#        old / new / old / new (the streaming kernels' scan warp waiting for a tile's prefix
#        before the producer hands the tile over, against after); then, in the time left, the
#        streaming forward's levels (bench.diag_cln_stream: kernel / no cross-tile wait / the
#        ring's loads and stores alone) in both trees, and this tree's cuda_ext cLN tests on
#        the GPU (tests/test_cuda_ext_paths.py, tests/test_cln.py --backend cuda_ext).
#   ncu: any card (the file names it): the Triton bf16 forward at (16, 512, 4000) and
#        (4, 256, 16000) under ncu (gpu_s62.sh ncu's method), levels 0-3 of bench.ablate_cln, so
#        that the statistics and the prefix wait are split (NOTES 61.7 item 1), into
#        $OUT/ncu63.txt; first the same levels back to back (bench.ablate_cln, CUDA graphs)
#        into $OUT/ablate63.log.
#   OUT=out bash bench/gpu_s63.sh ab|ncu
set -uo pipefail
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $card"
T0=$(date +%s)
left() { echo $(( ${BUDGET:-580} - ($(date +%s) - T0) )); }
case "${1:-}" in
  ab)
    [ -f ab_old/REV ] || { echo "ab_old/ missing (see the header)"; exit 2; }
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    gpu_build_ab
    AB_MODES=fwd,fwd_bwd T_AB=100 gpu_cuda_ext_rounds ab63
    echo "rounds done at $(( $(date +%s) - T0 )) s"
    if [ "$(left)" -gt 260 ]; then
      for side in old:ab_old new:.; do
        gpu_in_tree "${side#*:}" timeout -s KILL 60 python3 -m bench.diag_cln_stream \
          --variants "stream,stream diag1 no-wait,stream diag2 load-store" \
          > "$OUT/diag63-${side%%:*}.log" 2>&1
        echo "diag ${side%%:*} rc=$?"; grep -E "us|GB" "$OUT/diag63-${side%%:*}.log" | tail -20
      done
    fi
    lim=$(( $(left) - 15 ))
    [ "$lim" -gt 200 ] && lim=200
    if [ "$lim" -gt 60 ]; then gpu_cuda_ext_tests test-ab63 "$lim"; else echo "no time for the tests"; fi
    gpu_archive s63-ab
    ;;
  ncu)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh >/dev/null
    echo "card: $card" > "$OUT/ncu63.txt"
    # The same levels back to back (CUDA-graph replay, the benchmark's timer) on the same card.
    timeout -s KILL 150 python3 -m bench.ablate_cln --no-runs --dtype bf16 \
      --shapes 16x512x4000,4x256x16000 > "$OUT/ablate63.log" 2>&1
    echo "ablate rc=$?"; cat "$OUT/ablate63.log"
    gpu_ncu_bf16_levels ncu63 "0 1 2 3"
    ;;
  *) echo "usage: $0 ab|ncu" >&2; exit 2 ;;
esac
