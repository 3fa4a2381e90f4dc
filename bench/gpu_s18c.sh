#!/usr/bin/env bash
# Session 18: Triton's fp32 (2, 128, 64000) fwd+bwd took 133.9-136.5 us in three full cLN
# benchmark runs and 126.8-126.9 us when benchmarked alone (NOTES 20.4, 21.2). The same case
# alone, then with the eager and torch.compile peers in the same process, then alone again.
#   OUT=out bash bench/gpu_s18c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
run() {  # $1 tag, rest: extra args
  local tag=$1; shift
  timeout -s KILL 120 python3 -m bench --op cln --backend triton --mode fwd,fwd_bwd --dtype fp32 \
    --shapes 2x128x64000 --cuda-graph all --budget 0.15 --out "$OUT" --tag "$tag" "$@" \
    > "$OUT/bench-$tag.log" 2>&1
  echo "$tag rc=$?"; grep -E "^\| 2x128x64000 \| fwd_bwd \| triton" "$OUT/nvidia-h200-$tag.md"
}
run alone-1
run peers --peers eager,compile
run alone-2
