#!/usr/bin/env bash
# Last GPU call of session 6: every test on the GPU (make test-all), the cLN figures of both
# compiled backends' defaults (bench.tune --quick: the three issue shapes and the seed shape),
# then RMSNorm against F.rms_norm and Liger-Kernel in one run (bench/gpu_rms_peers.sh).
#   bash bench/gpu_s6_final.sh
set -uo pipefail
source bench/gpu_env.sh
# The CPU emulator self-test of cuda_ext is a CPU test (CI runs it); it is left out here.
PYTEST_ADDOPTS="--deselect tests/test_cuda_ext_build.py::test_kernels_on_cpu_emulator" \
  timeout -s KILL ${T_TESTS:-330} make test-all PY=python3 > "$OUT/test-all.log" 2>&1
echo "test-all rc=$?"; tail -3 "$OUT/test-all.log"
timeout -s KILL ${T_CLN:-100} python3 -m bench.tune --backend cuda_ext,triton --ops cln \
  --quick > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
T_BENCH=${T_BENCH:-120} bash bench/gpu_rms_peers.sh
