#!/usr/bin/env bash
# Needs the code at 76d9981 (backends/triton/two_pass.py and bench/probe_two_pass.py, removed after it).
# Session 30, first call: the Triton cLN in two reads (backends/triton/two_pass.py) against the
# single pass, with the benchmark's input rotation (bench/probe_two_pass.py):
#   OUT=out bash bench/gpu_s30.sh      -> $OUT/probe-two-pass-{core,bf16}.log
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
timeout -s KILL 300 python3 -m bench.probe_two_pass --dtype bf16,fp32 \
  --variants "single,two,two fwd only,two bwd only,two no hints,two fwd order" \
  > "$OUT/probe-two-pass-core.log" 2>&1
echo "core rc=$?"; cat "$OUT/probe-two-pass-core.log"
timeout -s KILL 200 python3 -m bench.probe_two_pass --dtype bf16 --shapes targets \
  --variants "two rows128,two rows512,two stages1,two stages3,two blocks2x,two warps8,two no pdl" \
  > "$OUT/probe-two-pass-bf16.log" 2>&1
echo "bf16 rc=$?"; cat "$OUT/probe-two-pass-bf16.log"
