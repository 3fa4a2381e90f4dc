#!/usr/bin/env bash
# The last GPU call of a session: every test on the GPU, then the figures of the code as it
# is (each backend's defaults, bench.tune --quick: checked against the float64 references,
# CUDA-graph timing, copy bandwidth of the same run).
#   bash bench/gpu_final.sh
# Steps run in priority order, each under its own time limit; logs go to $OUT.
set -uo pipefail
source bench/gpu_env.sh
# The CPU emulator self-test of cuda_ext is a CPU test (CI runs it); it is left out here.
PYTEST_ADDOPTS="--deselect tests/test_cuda_ext_build.py::test_kernels_on_cpu_emulator" \
  timeout -s KILL ${T_TESTS:-330} make test-all PY=python3 > "$OUT/test-all.log" 2>&1
echo "test-all rc=$?"; tail -3 "$OUT/test-all.log"
timeout -s KILL ${T_CLN:-90} python3 -m bench.tune --backend ${CLN_BACKENDS:-cuda_ext,triton} \
  --ops cln --quick > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
timeout -s KILL ${T_RMS:-60} python3 -m bench.tune --backend ${RMS_BACKENDS:-triton,cuda_ext} \
  --ops rmsnorm --quick > "$OUT/tune-rmsnorm-defaults.log" 2>&1; cat "$OUT/tune-rmsnorm-defaults.log"
