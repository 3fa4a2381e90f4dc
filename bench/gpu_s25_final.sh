#!/usr/bin/env bash
# Session 25, the final calls on the final code (the launches chained by PDL):
#   OUT=out bash bench/gpu_s25_final.sh all    make test-all, then the cLN benchmark with its
#                                              peers (the README's cLN table): s25-all.tgz
#   OUT=out bash bench/gpu_s25_final.sh main   the README's main job (make bench at the target
#                                              shapes, every backend and peer, plots): s25-main.tgz
set -uo pipefail
source bench/gpu_env.sh
case "${1:-all}" in
  all) gpu_final_all s25-all ;;
  main) gpu_main_job s25-main ;;
  *) echo "usage: $0 all|main" >&2; exit 2 ;;
esac
