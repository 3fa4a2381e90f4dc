#!/usr/bin/env bash
# Session 19: NOTES 21.4's order effect inside one run (bench/probe_order.py --one-run): Triton
# fp32 (2, 128, 64000) as group 0, after (16, 512, 4000), and again; then the same with the
# caching allocator left full between groups (--keep-cache).
#   OUT=out bash bench/gpu_s19d.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
A=2x128x64000
for extra in "" "--keep-cache"; do
  tag=one-run${extra:+-keep-cache}
  timeout -s KILL 200 python3 -m bench.probe_order --one-run $extra \
    --sequence "$A,16x512x4000,$A,$A" > "$OUT/probe-$tag.log" 2>&1
  echo "$tag rc=$?"; grep -E "us \(" "$OUT/probe-$tag.log"; tail -2 "$OUT/probe-$tag.log"
done
