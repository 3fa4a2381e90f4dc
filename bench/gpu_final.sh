#!/usr/bin/env bash
# The last GPU call of a session: every test on the GPU, then the figures of the code as it
# is (each backend's defaults), then a knob sweep that may inform the next session.
#   bash bench/gpu_final.sh
# Steps run in priority order, each under its own time limit; logs go to $OUT.
set -uo pipefail
source bench/gpu_env.sh
# The CPU emulator self-test of cuda_ext is a CPU test (CI runs it); it is left out here.
PYTEST_ADDOPTS="--deselect tests/test_cuda_ext_build.py::test_kernels_on_cpu_emulator" \
  timeout -s KILL ${T_TESTS:-300} make test-all PY=python3 > "$OUT/test-all.log" 2>&1
echo "test-all rc=$?"; tail -3 "$OUT/test-all.log"
timeout -s KILL ${T_CLN:-60} python3 -m bench.tune --backend ${CLN_BACKENDS:-cuda_ext} --ops cln --quick \
  > "$OUT/tune-cln-defaults.log" 2>&1; cat "$OUT/tune-cln-defaults.log"
timeout -s KILL ${T_RMS:-60} python3 -m bench.tune --backend triton --ops rmsnorm --dtype bf16 \
  > "$OUT/tune-rmsnorm-bf16.log" 2>&1; cat "$OUT/tune-rmsnorm-bf16.log"
