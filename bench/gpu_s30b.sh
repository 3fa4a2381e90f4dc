#!/usr/bin/env bash
# Needs the code at 76d9981 (backends/triton/two_pass.py and bench/probe_two_pass.py, removed after it).
# Session 30, second call: where the two-pass path's time goes (per-kernel device time,
# torch.profiler; registers), and the tile-size variants timed:
#   OUT=out bash bench/gpu_s30b.sh      -> $OUT/probe-two-pass-{prof,sizes}.log
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 200 python3 -m bench.probe_two_pass --dtype bf16,fp32 --shapes targets \
  --modes fwd_bwd --profile 20 \
  --variants "single,two,two apply2k,two apply4k,two stats16k,two minprog1" \
  > "$OUT/probe-two-pass-prof.log" 2>&1
echo "prof rc=$?"; cat "$OUT/probe-two-pass-prof.log"
timeout -s KILL 250 python3 -m bench.probe_two_pass --dtype bf16 --shapes targets \
  --variants "two apply2k,two apply4k,two apply16k,two apply16k w8,two stats8k,two stats16k,two stats16k w8,two minprog1,two minprog1 rows512" \
  > "$OUT/probe-two-pass-sizes.log" 2>&1
echo "sizes rc=$?"; cat "$OUT/probe-two-pass-sizes.log"
