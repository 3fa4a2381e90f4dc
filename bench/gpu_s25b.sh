#!/usr/bin/env bash
# Session 25: with the launches chained by PDL (CLN_PDL), the first-wave staggers measured
# again (two rounds of bench.tune each: the forward's on fwd, the backward's on fwd+bwd), and
# the seed by ticket kind.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s25b.sh
set -uo pipefail
source bench/gpu_env.sh
T_TUNE=${T_TUNE_FWD:-125} gpu_tune_rounds fwd25 \
  "default,stagger fwd 2us,stagger fwd 4us,stagger fwd 5us,no pdl" fwd
T_TUNE=${T_TUNE_BWD:-125} gpu_tune_rounds bwd25 \
  "default,stagger bwd 3us,stagger bwd 5us,stagger bwd 6us" fwd_bwd
for r in 1 2; do
  timeout -s KILL 60 python3 -m bench.tune --backend triton --ops cln --parts seed \
    > "$OUT/tune-seed25-$r.log" 2>&1; echo "seed rc=$?"; grep cln "$OUT/tune-seed25-$r.log"
done
gpu_archive s25b
