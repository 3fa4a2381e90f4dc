#!/usr/bin/env bash
# Session 9, last call: the ring shape again now that the TMA copies free the producer (the
# session-8 sweep, on cp.async, found deeper rings with the producer further ahead slower):
# the automatic plan against 3-4 stages with a lead of 2-3, one run (bench.tune).
#   OUT=out bash bench/gpu_s9d.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_CLN:-150} python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes \
  --variants "default,ppr8 S3 D2,ppr8 S4 D2,ppr4 S4 D2,ppr16 S3 D2" \
  > "$OUT/tune-cln-lead.log" 2>&1; cat "$OUT/tune-cln-lead.log"
