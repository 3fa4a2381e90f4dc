#!/usr/bin/env bash
# Session 16, third call: the Triton backward's minimum tile row per dtype (bench.tune variants
# "bwd minrow128", "bwd16 minrow32", "bwd16 minrow128") against the default (ROUNDS="1 2": twice).
#   OUT=out bash bench/gpu_s16c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for r in ${ROUNDS:-1}; do
  timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --variants "default,bwd minrow128,bwd16 minrow32,bwd16 minrow128" > "$OUT/tune-minrow-$r.log" 2>&1
  echo "round $r rc=$?"; grep fwd_bwd "$OUT/tune-minrow-$r.log"; grep -i fail "$OUT/tune-minrow-$r.log"
done
