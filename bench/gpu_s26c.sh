#!/usr/bin/env bash
# Session 26: the zero kernel at the head of each cLN chain launched as a programmatic
# dependent of the launch before it (CLN_PDL_ZERO): the Triton cLN tests on the GPU, then two
# rounds of bench.tune against the plain zero launch (and the seed).
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s26c.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-200} gpu_test_triton_cln
grep -E "FAILED|Error" "$OUT/test-triton.log" | head -20
T_TUNE=${T_TUNE:-120} gpu_tune_rounds zero26 "default,zero plain" fwd,fwd_bwd
timeout -s KILL 100 python3 -m bench.tune --backend triton --ops cln --parts seed \
  --variants "default,zero plain" > "$OUT/tune-seed26.log" 2>&1
echo "seed rc=$?"; grep cln "$OUT/tune-seed26.log"
