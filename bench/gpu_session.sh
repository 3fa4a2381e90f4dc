#!/usr/bin/env bash
# One call on the GPU machine: set up, test every backend on the GPU, benchmark.
# Used as:   bash bench/gpu_session.sh [test] [bench ARGS...]
# Logs go to $OUT (the device tool brings them back) or ./out.
# The machine has torch/triton/cupy/numba but numpy 2.5 (breaks numba-cuda);
# the wheels in .whl/ (../shared/tools/gpu-wheels.sh) fix that and add Liger.
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
unset TRITON_INTERPRET NUMBA_ENABLE_CUDASIM
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)" | tee -a "$OUT/gpu.txt"
rc=0
while [ $# -gt 0 ]; do
  case "$1" in
    test) shift
      python3 -m pytest tests -q -rs -x --timeout=900 -p no:cacheprovider 2>&1 | tee "$OUT/test.log" | tail -40
      rc=$(( rc | ${PIPESTATUS[0]} )) ;;
    selftest) shift
      python3 -m backends.cuda_ext.kernels --selftest 2>&1 | tee "$OUT/selftest.log" | tail -30 ;;
    bench) shift
      python3 -m bench "$@" 2>&1 | tee "$OUT/bench.log"
      rc=$(( rc | ${PIPESTATUS[0]} ))
      cp -r bench/results "$OUT/results" 2>/dev/null
      break ;;
    py) shift
      python3 "$1" 2>&1 | tee "$OUT/py.log"; shift ;;
    *) echo "unknown step $1"; exit 2 ;;
  esac
done
exit $rc
