#!/usr/bin/env bash
# Last GPU call of session 5: every test on the GPU (make test-all), then the RMSNorm figures of
# the defaults (bench.tune --quick, both compiled backends) and against F.rms_norm and
# Liger-Kernel (python -m bench), and the cLN seed shape of both backends.
#   bash bench/gpu_s5_final.sh
set -uo pipefail
source bench/gpu_env.sh
# The CPU emulator self-test of cuda_ext is a CPU test (CI runs it); it is left out here.
PYTEST_ADDOPTS="--deselect tests/test_cuda_ext_build.py::test_kernels_on_cpu_emulator" \
  timeout -s KILL ${T_TESTS:-330} make test-all PY=python3 > "$OUT/test-all.log" 2>&1
echo "test-all rc=$?"; tail -3 "$OUT/test-all.log"
timeout -s KILL ${T_RMS:-70} python3 -m bench.tune --backend triton,cuda_ext --ops rmsnorm \
  --quick > "$OUT/tune-rmsnorm-defaults.log" 2>&1; cat "$OUT/tune-rmsnorm-defaults.log"
timeout -s KILL ${T_SEED:-30} python3 -m bench.tune --backend cuda_ext,triton --ops cln \
  --parts seed --quick > "$OUT/tune-seed-defaults.log" 2>&1; cat "$OUT/tune-seed-defaults.log"
T_BENCH=${T_BENCH:-120} bash bench/gpu_rms_peers.sh
