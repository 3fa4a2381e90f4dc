#!/usr/bin/env bash
# Session 34's third call, as run (the README's cLN table comes from its benchmark): the two
# Triton path and compile test files (250-s limit; killed), then the cLN benchmark with its
# peers.  (bench/gpu_s34_final.sh bench would also run the main job: not run, device time.)
#   OUT=out bash bench/gpu_s34_final_b.sh
source bench/gpu_env.sh
t0=$(date +%s)
PYTEST_ADDOPTS="-n 4 --durations=40" timeout -s KILL 250 python3 -m pytest \
  tests/test_triton_paths.py tests/test_triton_compile.py -q -rs > "$OUT/test-triton-tail.log" 2>&1
echo "tail tests rc=$? $(( $(date +%s) - t0 )) s"
gpu_bench_cln 170 > /dev/null
echo "bench rc=$?"
