#!/usr/bin/env bash
# Session 22: the forward's first-wave spread, 0-6 us, two rounds of bench.tune in one call.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s22e.sh
set -uo pipefail
source bench/gpu_env.sh
V="no stagger,stagger fwd 3us,stagger fwd 4us,stagger fwd 5us,stagger fwd 6us"
for r in 1 2; do
  timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend triton --ops cln --parts shapes,seed \
    --variants "$V" > "$OUT/tune-spread-$r.log" 2>&1
  echo "round $r rc=$?"
done
grep -h " fwd " "$OUT"/tune-spread-*.log | sort -k3,6 -s
