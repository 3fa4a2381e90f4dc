#!/usr/bin/env bash
# Session 28: at the fp32 backward's 4096-value tiles (C <= 128, CLN_BWD_TILE_32BIT), the
# backward's first-wave stagger again (3, 5, 6 us against the default 4) and 2048-value tiles.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s28c.sh
set -uo pipefail
source bench/gpu_env.sh
TUNE_DTYPE=fp32 T_TUNE=${T_TUNE:-150} gpu_tune_rounds bwd28c \
  "default,stagger bwd 3us,stagger bwd 5us,stagger bwd 6us,bwd32 tile2048 rows64" fwd_bwd
