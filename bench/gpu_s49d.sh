#!/usr/bin/env bash
# Session 49: the fp32 forward at (4, 256, 16000) with rows of 256 B (64 frames, tiles of
# 16384 values) instead of 128 B: its loads and stores alone reach 0.82 of copy there against
# 0.87 at (2, 128, 64000), whose rows are 256 B (NOTES 46.2).  Three rounds, in separate
# processes, of bench.tune's fp32 forward alone and fwd+bwd at the target shapes (round 1 with
# the kernels' registers and spills): default, "fwd wide256" (4 warps, uncapped), "fwd wide256
# w8" (8 warps, 128 registers).  Into $OUT/tune-wide49-{1,2,3}.log, archived into $OUT/s49d.tgz.
#   OUT=out bash bench/gpu_s49d.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
V="default,fwd wide256,fwd wide256 w8"
for r in 1 2 3; do
  regs=""; [ "$r" = 1 ] && regs="--regs"
  # shellcheck disable=SC2086
  timeout -s KILL 170 python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --modes fwd,fwd_bwd --variants "$V" --dtype fp32 $regs > "$OUT/tune-wide49-$r.log" 2>&1
  echo "round $r rc=$? $(date +%T)"
done
head -2 "$OUT/tune-wide49-1.log"
grep -h "cln" "$OUT"/tune-wide49-*.log | sort -k3,6 -s
gpu_archive s49d
ls -la "$OUT"
