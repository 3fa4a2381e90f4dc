#!/usr/bin/env bash
# Needs the code at 76d9981 (backends/triton/two_pass.py and bench/probe_two_pass.py, removed after it).
# Session 30, fourth call: the two-pass path with shifted per-frame sums and the prefix fused
# into the output programs, against the single pass and session 30c's two-pass:
#   OUT=out bash bench/gpu_s30d.sh      -> $OUT/probe-two-pass-{bf16,fp32,prof}.log
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 200 python3 -m bench.probe_two_pass --dtype bf16 --shapes targets \
  --variants "single,two,two s30c,two unshifted,two unfused,two fwd only,two bwd only,two sblock1k,two sblock4k,two swarps2 sblock4k,two minprog4,two minprog16,two awarps2,two apply4k awarps2,two stages1" \
  > "$OUT/probe-two-pass-bf16.log" 2>&1
echo "bf16 rc=$?"; cat "$OUT/probe-two-pass-bf16.log"
timeout -s KILL 100 python3 -m bench.probe_two_pass --dtype fp32 \
  --variants "single,two,two fwd only,two bwd only" \
  > "$OUT/probe-two-pass-fp32.log" 2>&1
echo "fp32 rc=$?"; cat "$OUT/probe-two-pass-fp32.log"
timeout -s KILL 60 python3 -m bench.probe_two_pass --dtype bf16 --shapes targets \
  --modes fwd_bwd --profile 20 --variants "two" > "$OUT/probe-two-pass-prof.log" 2>&1
echo "prof rc=$?"; grep -v regs "$OUT/probe-two-pass-prof.log"
