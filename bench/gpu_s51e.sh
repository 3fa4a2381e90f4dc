#!/usr/bin/env bash
# Session 51: is cuda_ext's fwd+bwd slower at the new code (the tile decode through cln_tile_at)
# than at c2d2b45 (session 50)?  bench.tune's fwd+bwd of the default, fp32, at the three target
# shapes, alternated old / new / old / new in one call; the old tree is `git archive c2d2b45`
# unpacked into ab_old/ (untracked, carried with the working tree).  Both extensions built in
# parallel first.  Logs: $OUT/ab-{old,new}-{1,2}.log.
#   git archive c2d2b45 | tar -x -C ab_old --exclude=bench/results; OUT=out bash bench/gpu_s51e.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
date +%T
gpu_build_tree ab_old & gpu_build_tree . & wait
date +%T
gpu_ab_rounds ab "cuda_ext cln\|copy" "old:ab_old new:." timeout 60 python3 -m bench.tune \
  --backend cuda_ext --ops cln --parts shapes --modes fwd_bwd --variants default \
  --dtype "${AB_DTYPE:-fp32}"
date +%T
