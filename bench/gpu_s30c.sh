#!/usr/bin/env bash
# Needs the code at 76d9981 (backends/triton/two_pass.py and bench/probe_two_pass.py, removed after it).
# Session 30, third call: the two-pass path with one-warp statistics programs (timing sweep
# over its knobs at the bf16 targets; per-kernel profile with and without PDL):
#   OUT=out bash bench/gpu_s30c.sh      -> $OUT/probe-two-pass-{sweep,prof}.log
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 330 python3 -m bench.probe_two_pass --dtype bf16 --shapes targets \
  --variants "single,two,two no hints,two fwd order,two no pdl,two s30a,two rows256,two rows256 minprog4,two minprog4,two minprog16,two stages1,two stages3,two stages4,two sblock1k,two sblock4k,two sblock4k s3,two swarps2,two swarps2 sblock4k,two apply4k,two apply16k,two awarps2,two awarps8,two apply4k awarps2" \
  > "$OUT/probe-two-pass-sweep.log" 2>&1
echo "sweep rc=$?"; cat "$OUT/probe-two-pass-sweep.log"
timeout -s KILL 120 python3 -m bench.probe_two_pass --dtype bf16,fp32 --shapes targets \
  --modes fwd_bwd --profile 20 --variants "two,two no pdl" \
  > "$OUT/probe-two-pass-prof.log" 2>&1
echo "prof rc=$?"; grep -v regs "$OUT/probe-two-pass-prof.log"
