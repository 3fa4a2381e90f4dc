#!/usr/bin/env bash
# Session 9, third call: A/B of the cross-tile prefix with the group prefix's load issued
# together with the tile words' loads (B, the working tree) against one after the other (A:
# exp_a/, the previous commit's backends/common/bench, untracked; it travels with the working
# tree).  Both extensions built side by side; B's cLN tests; B's diagnostic levels;
# bench.tune --quick alternating A, B, A, B.
#   OUT=out bash bench/gpu_s9c.sh
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export TORCH_EXTENSIONS_DIR=$PWD/.torch_extensions PYTHONUNBUFFERED=1
unset TRITON_INTERPRET NUMBA_ENABLE_CUDASIM
build='import backends.cuda_ext.kernels as k; k.extension()'
t0=$(date +%s)
(cd exp_a && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -c "$build") > "$OUT/build-a.log" 2>&1 &
PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -c "$build" > "$OUT/build-b.log" 2>&1
wait; echo "builds: $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/build-a.log" "$OUT/build-b.log"
PYTHONPATH=/tmp/site:$PWD timeout -s KILL 120 python3 -m pytest -q tests/test_cuda_ext_paths.py \
  tests/test_cln.py --backend cuda_ext > "$OUT/test-cln.log" 2>&1
echo "cln tests rc=$?"; tail -2 "$OUT/test-cln.log"
PYTHONPATH=/tmp/site:$PWD timeout -s KILL 80 python3 -m bench.diag_cln_stream \
  > "$OUT/diag-stream.log" 2>&1; cat "$OUT/diag-stream.log"
for rep in 1 2; do
  for v in a b; do
    dir=$PWD; [ $v = a ] && dir=$PWD/exp_a
    (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout -s KILL 50 python3 -m bench.tune \
      --backend cuda_ext --ops cln --quick --parts shapes,long) > "$OUT/ab-$v-$rep.log" 2>&1
    echo "== $v ($rep)"; cat "$OUT/ab-$v-$rep.log"
  done
done
