#!/usr/bin/env bash
# Session 23: the cLN backward's dgamma / dbeta partials chained into slot rows
# (CLN_BWD_SLOTS_PER_SM) instead of a row per tile. The GPU tests of the chain, then bench.tune's
# fwd+bwd at the target shapes, two rounds in separate processes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s23.sh
set -uo pipefail
source bench/gpu_env.sh
par=$(gpu_xdist_args)
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q $par tests/test_triton_paths.py \
  -k "chain or placement or colsum" > "$OUT/test-chain.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-chain.log"
V="row per tile,slots 1/SM,slots 2/SM,slots 4/SM,slots 8/SM,slots 2/SM colsum1"
for r in 1 2; do
  timeout -s KILL ${T_TUNE:-170} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --modes fwd_bwd --variants "$V" > "$OUT/tune-slots-$r.log" 2>&1
  echo "round $r rc=$?"
done
head -2 "$OUT/tune-slots-1.log"
grep -h "cln" "$OUT"/tune-slots-*.log | sort -k3,6 -s
