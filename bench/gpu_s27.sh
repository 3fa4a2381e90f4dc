#!/usr/bin/env bash
# Session 27: CLN_PDL_EARLY, the zero kernel letting the cLN kernel launch before it waits (the
# cLN kernel waiting before its first load): the Triton cLN tests on the GPU (the PDL test runs
# both orders), then two rounds of bench.tune against the default and the seed.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s27.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-200} gpu_test_triton_cln
grep -E "FAILED|Error" "$OUT/test-triton.log" | head -20
T_TUNE=${T_TUNE:-120} gpu_tune_rounds early27 "default,pdl early" fwd,fwd_bwd
timeout -s KILL 100 python3 -m bench.tune --backend triton --ops cln --parts seed \
  --variants "default,pdl early" > "$OUT/tune-seed27.log" 2>&1
echo "seed rc=$?"; grep cln "$OUT/tune-seed27.log"
