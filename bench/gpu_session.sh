#!/usr/bin/env bash
# One call on the GPU machine: tests of every backend on the GPU, then the benchmark.
#   bash bench/gpu_session.sh            # make test-all && make bench (targets, fp32+bf16)
#   BENCH_ARGS="..." bash bench/gpu_session.sh
# Logs and results go to $OUT (the device tool brings them back), else ./out.
# That machine has CUDA torch/triton/cupy/numba but numpy 2.5 (breaks numba-cuda):
# the wheels in .whl/ (../shared/tools/gpu-wheels.sh) fix that and add Liger-Kernel.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export TORCH_EXTENSIONS_DIR=$PWD/.torch_extensions PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv \
  | tee "$OUT/gpu.txt"
t0=$(date +%s)
# Build the CUDA extension first so its one-time compile is not inside a test's timeout.
python3 -c "import backends.cuda_ext.kernels as k; k.extension()" 2>&1 | tail -3
echo "cuda_ext build: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
set -o pipefail
timeout ${TEST_TIMEOUT:-330} make test-all PY=python3 PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-}" 2>&1 | tee "$OUT/test.log" | tail -15
rc=$?
BENCH_ARGS=${BENCH_ARGS:---shapes targets --dtype fp32,bf16 --mode fwd,fwd_bwd --plot --cuda-graph all}
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  timeout ${BENCH_TIMEOUT:-400} make bench PY=python3 BENCH_ARGS="$BENCH_ARGS" > "$OUT/bench.log" 2>&1
  rc=$(( rc | $? ))
  tail -5 "$OUT/bench.log"
  # At most 8 files come back from $OUT: copy the result files of this run only.
  for f in bench/results/${RESULTS_GLOB:-*}.{json,md,png}; do
    [ -e "$f" ] && cp "$f" "$OUT/"
  done
fi
exit $rc
