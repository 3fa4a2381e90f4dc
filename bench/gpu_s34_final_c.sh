#!/usr/bin/env bash
# Session 34's fourth call, as run, after the oracle slice of test_even_and_pack (NOTES 35.4):
# the two Triton path and compile test files, verbose (215-s limit, within the device time
# left; killed).  It also built the CUDA extension first (71 s): SKIP_CUDA_BUILD=1 was left
# out by mistake.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s34_final_c.sh
source bench/gpu_env.sh >/dev/null 2>&1
t0=$(date +%s)
timeout -s KILL 215 python3 -m pytest tests/test_triton_paths.py tests/test_triton_compile.py \
  -n 4 -v --durations=25 -p no:cacheprovider > "$OUT/test-triton-tail2.log" 2>&1
echo "rc=$? $(( $(date +%s) - t0 )) s"
