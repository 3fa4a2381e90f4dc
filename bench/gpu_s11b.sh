#!/usr/bin/env bash
# Session 11, second call: every test on the GPU at the code of main (make test-all; the
# 512-thread forward and the role dispatch had not run under it), then cuda_ext rings that leave
# room for one block per SM (which then takes the 512-thread roles) at the shapes whose default
# plan has 2-3 blocks per SM (bench/results/nvidia-h200-s11b-*; NOTES 14.2).
#   OUT=out bash bench/gpu_s11b.sh
set -uo pipefail
source bench/gpu_env.sh
T_TESTS=${T_TESTS:-400} gpu_test_all
timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes \
  --variants "default,ppr16 S3,ppr8 S4,ppr16 S4" > "$OUT/tune-one-block.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-one-block.log"
