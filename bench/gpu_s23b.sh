#!/usr/bin/env bash
# Session 23: the Triton forward's earlier launch variants again, now that the first wave is
# staggered (CLN_FWD_STAGGER_NS, session 22): tile size, register caps, warps, groups, runs.
# bench.tune, forward only, two rounds in separate processes.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s23b.sh
set -uo pipefail
source bench/gpu_env.sh
V="default,fwd16 tile16k,pairs nreg144/184,pairs no cap,fwd16 ept64 nreg128,group256,run4"
V="$V,fwd ept128 nreg200,fwd rows128 ept128,no stagger"
for r in 1 2; do
  timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --modes fwd --variants "$V" > "$OUT/tune-fwd-$r.log" 2>&1
  echo "round $r rc=$?"
done
head -2 "$OUT/tune-fwd-1.log"
grep -h "cln" "$OUT"/tune-fwd-*.log | sort -k3,6 -s
