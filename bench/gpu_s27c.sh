#!/usr/bin/env bash
# Session 27: cuda_ext's cLN launches chained by programmatic dependent launch (CLN_PDL: the
# workspace zeroed by a kernel instead of a memset, every launch a dependent of the one
# before it): the cuda_ext tests and the chained-launch tests of both backends on the GPU,
# then two rounds of bench.tune against plain launches, and the seed.
#   OUT=out bash bench/gpu_s27c.sh
set -uo pipefail
source bench/gpu_env.sh
par=$(gpu_xdist_args)
gpu_test_pdl
timeout -s KILL 240 python3 -m pytest -q $par --backend cuda_ext tests/test_cln.py \
  tests/test_cuda_ext_paths.py > "$OUT/test-cuda-ext.log" 2>&1
echo "cuda_ext tests rc=$?"; tail -3 "$OUT/test-cuda-ext.log"
grep -E "FAILED|Error" "$OUT"/test-*.log | head -20
for r in 1 2; do
  timeout -s KILL 150 python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes \
    --modes fwd,fwd_bwd --variants "default,no pdl" --dtype fp32,bf16 \
    > "$OUT/tune-pdl27c-$r.log" 2>&1
  echo "round $r rc=$?"
done
head -2 "$OUT/tune-pdl27c-1.log"
grep -h "cln" "$OUT"/tune-pdl27c-*.log | sort -k3,6 -s
gpu_tune_seed seed27c cuda_ext
