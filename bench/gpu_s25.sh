#!/usr/bin/env bash
# Session 25: the cLN launches chained by programmatic dependent launch (CLN_PDL): the Triton
# cLN tests on the GPU (with test_pdl_leaves_the_output_unchanged), two rounds of bench.tune,
# default (PDL) against "no pdl", forward and fwd+bwd; then the seed's per-tile timelines by
# ticket kind (26.4's unexplained one-wave slowdown by program id).
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s25.sh
set -uo pipefail
source bench/gpu_env.sh
python3 -c "import triton, triton.language as tl; print('triton', triton.__version__, \
tl.extra.cuda.gdc_wait, tl.extra.cuda.gdc_launch_dependents)" 2>&1 | tail -2
gpu_test_triton_cln
grep -E "pdl|PDL|FAIL|Error" "$OUT/test-triton.log" | head -20
T_TUNE=${T_TUNE:-150} gpu_tune_rounds pdl25 "default,no pdl" fwd,fwd_bwd
timeout -s KILL 60 python3 -m bench.tune --backend triton --ops cln --parts seed \
  > "$OUT/tune-seed.log" 2>&1; echo "seed rc=$?"; grep cln "$OUT/tune-seed.log"
for d in fwd bwd; do
  timeout -s KILL 90 python3 -m bench.timeline_cln --shapes 80x64x301 --tickets atomic,pid \
    --levels 0 --direction $d > "$OUT/timeline-seed-$d.log" 2>&1
  echo "timeline $d rc=$?"; tail -25 "$OUT/timeline-seed-$d.log"
done
gpu_archive s25
