#!/usr/bin/env bash
# Session 31, the final calls on the code of main (no kernel changed since session 30's runs):
#   OUT=out bash bench/gpu_s31_final.sh all    make test-all, then the cLN benchmark with its peers
#   OUT=out bash bench/gpu_s31_final.sh main   the README's main job (make bench, every backend
#                                              and peer, plots), with the time it needs (225 s in
#                                              session 30, killed at 230 there), then the
#                                              Triton forward's per-tile timeline
set -uo pipefail
source bench/gpu_env.sh
case "${1:-all}" in
  all) T_TESTS=${T_TESTS:-320} gpu_final_call all s31 ;;
  main)
    gpu_make_bench 360  # T_BENCH overrides the limit (gpu_env.sh)
    # Where a Triton forward tile's time goes on the code of main (the last timeline, NOTES
    # 25.2, predates tiles by program id and the PDL chains): the kernel and its skeleton.
    timeout -s KILL 90 python3 -m bench.timeline_cln --levels 0,3 > "$OUT/timeline-cln.log" 2>&1
    echo "timeline rc=$?"; tail -40 "$OUT/timeline-cln.log"
    gpu_archive s31-main ;;
  *) echo "usage: $0 all|main" >&2; exit 2 ;;
esac
ls -la "$OUT"
