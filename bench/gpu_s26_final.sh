#!/usr/bin/env bash
# Session 26, the final calls on the final code (the zero kernel a PDL dependent too):
#   OUT=out bash bench/gpu_s26_final.sh all    make test-all, then the cLN benchmark with its
#                                              peers (the README's cLN table): s26-all.tgz
#   OUT=out bash bench/gpu_s26_final.sh main   the README's main job (make bench at the target
#                                              shapes, every backend and peer, plots): s26-main.tgz
set -uo pipefail
source bench/gpu_env.sh
case "${1:-all}" in
  all) gpu_final_all s26-all ;;
  main) gpu_main_job s26-main ;;
  *) echo "usage: $0 all|main" >&2; exit 2 ;;
esac
