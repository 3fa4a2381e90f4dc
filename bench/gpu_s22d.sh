#!/usr/bin/env bash
# Session 22: the first wave of tickets staggered (CLN_FWD_STAGGER_NS / CLN_BWD_STAGGER_NS), two
# rounds of bench.tune in one call.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s22d.sh
set -uo pipefail
source bench/gpu_env.sh
V="no stagger,stagger fwd 1us,stagger fwd 2us,stagger fwd 3us,stagger bwd 2us,stagger bwd 4us,stagger 2us"
for r in 1 2; do
  timeout -s KILL ${T_TUNE:-270} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --variants "$V" > "$OUT/tune-stagger-$r.log" 2>&1
  echo "round $r rc=$?"
done
grep -h "cln" "$OUT"/tune-stagger-*.log | sort -k3,6 -s | head -200
