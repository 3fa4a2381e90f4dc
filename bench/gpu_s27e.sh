#!/usr/bin/env bash
# Session 27, after the review commits (the Triton tile's wait skipped where _tile_start has
# waited; cuda_ext's tile_launch): the chained-launch tests of both backends, the cuda_ext
# path tests and the Triton cLN tests on the GPU.
#   OUT=out bash bench/gpu_s27e.sh
set -uo pipefail
source bench/gpu_env.sh
gpu_test_pdl
par=$(gpu_xdist_args)
timeout -s KILL 150 python3 -m pytest -q $par tests/test_cuda_ext_paths.py -k "regs or pdl" \
  > "$OUT/test-cuda-ext-regs.log" 2>&1
echo "cuda_ext regs tests rc=$?"; tail -2 "$OUT/test-cuda-ext-regs.log"
T_TESTS=${T_TESTS:-150} gpu_test_triton_cln
grep -E "FAILED|Error" "$OUT"/test-*.log | head -20
