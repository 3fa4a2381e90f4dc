#!/usr/bin/env bash
# Session 23: the cLN backward's dgamma / dbeta partials chained into slot rows
# (CLN_BWD_SLOTS_PER_SM, code at 3658080) instead of a row per tile. The GPU tests of the chain,
# then bench.tune's fwd+bwd at the target shapes, two rounds in separate processes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s23.sh
set -uo pipefail
source bench/gpu_env.sh
par=$(gpu_xdist_args)
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q $par tests/test_triton_paths.py \
  -k "chain or placement or colsum" > "$OUT/test-chain.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-chain.log"
T_TUNE=${T_TUNE:-170} gpu_tune_rounds slots \
  "row per tile,slots 1/SM,slots 2/SM,slots 4/SM,slots 8/SM,slots 2/SM colsum1" fwd_bwd
