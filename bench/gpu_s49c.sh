#!/usr/bin/env bash
# Session 49: the fp32 forward alone at (4, 256, 16000) sits 0.1-0.2 us above the 0.80 line
# (gpu_s49b.sh: median 38.4 us where 0.80 is 38.3).  Three rounds, in separate processes, of
# bench.tune's fp32 forward (torch.no_grad) at the target shapes: the default against the
# pace of a forward alone at 5750 / 6250 GB/s (6000 now), the forward's divisions by
# div.approx, and prefix groups of 256 tiles.  Into $OUT/tune-fwd49-{1,2,3}.log, archived
# into $OUT/s49c.tgz.
#   OUT=out bash bench/gpu_s49c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
ROUNDS=3 TUNE_DTYPE=fp32 T_TUNE=200 gpu_tune_rounds fwd49 \
  "default,alone pace 5750,alone pace 6250,fwd fast div,group256" fwd
gpu_archive s49c
ls -la "$OUT"
