#!/usr/bin/env bash
# Session 42's experiment call (NOTES 43): two untried prefix-wait details, each against the
# default in the same call.
#   1. Triton: the forward's per-thread polls reloading with ld.relaxed.gpu instead of
#      ld.volatile (CLN_FWD_SPIN_RELAXED): the GPU test that both give the default's bits, then
#      two rounds of bench.tune (forward, fp32 and bf16, the target shapes).
#   2. cuda_ext: 8 rounds of 32 published words in flight per lane in the prefix reduction
#      (kPrefixU = 8) instead of 4. A compile-time constant, so exp_a/ is a copy of this tree
#      with that one line changed, built beside the tree's own extension (bench/gpu_ab.sh), and
#      bench.tune's default alternates A (kPrefixU = 8), B (the tree), A, B, forward and
#      fwd+bwd at the target shapes.
#   OUT=out bash bench/gpu_s42.sh   (at 327f41c: the relaxed knob and its tune variant were removed
#                                     after this call, NOTES 43.1)
set -uo pipefail
rm -rf exp_a && mkdir exp_a && cp -r backends common bench exp_a/
sed -i 's/^constexpr int kPrefixU = 4;/constexpr int kPrefixU = 8;/' \
  exp_a/backends/cuda_ext/include/cln_kernels.cuh
grep -c "^constexpr int kPrefixU = 8;" exp_a/backends/cuda_ext/include/cln_kernels.cuh || exit 1
source bench/gpu_ab.sh
ab_setup
date +%T
timeout -s KILL 150 python3 -m pytest -q --backend triton tests/test_triton_paths.py \
  -k thread_spin > "$OUT/test-spin42.log" 2>&1
echo "thread spin tests rc=$?"; tail -n 2 "$OUT/test-spin42.log"
date +%T
T_TUNE=150 gpu_tune_rounds relaxed42 "default,fwd spin relaxed" fwd
date +%T
T_AB=90 ab_tune --backend cuda_ext --ops cln --parts shapes --modes fwd,fwd_bwd --variants default
date +%T
ls -la "$OUT"
