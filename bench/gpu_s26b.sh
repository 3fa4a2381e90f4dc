#!/usr/bin/env bash
# Session 26: the forward's words tagged with the launch (CLN_FWD_TAGGED, code at commit 86831ea,
# reverted after this call): the Triton cLN tests on the GPU (the graph-replay and %gridid tests
# among them), bench.probe_scratch, and two rounds of bench.tune, tagged against zeroed.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s26b.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-200} gpu_test_triton_cln
grep -E "tagged|launch_tags|FAILED|Error" "$OUT/test-triton.log" | head -20
timeout -s KILL ${T_PROBE:-150} python3 -m bench.probe_scratch > "$OUT/probe-scratch.log" 2>&1
echo "probe rc=$?"; cat "$OUT/probe-scratch.log"
T_TUNE=${T_TUNE:-120} gpu_tune_rounds tag26 "default,zeroed fwd" fwd,fwd_bwd
