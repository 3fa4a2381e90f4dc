#!/usr/bin/env bash
# Session 8, A/B of the streaming forward with 8 producer warps (384 threads, 2 blocks per SM)
# against 4 (256 threads, up to 3 blocks per SM): exp_a/ holds the previous commit's
# backends/common/bench (untracked; it travels with the working tree), both extensions are
# built side by side, the new one's cLN tests run, then bench.tune --quick alternates A, B, A, B.
#   OUT=out bash bench/gpu_s8d.sh
# Run at commit a85557b (the experiment; exp_a/ was `git archive 8b688e3 backends common bench`);
# the 8-warp forward was removed after it (NOTES 11.6).
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
PYTHONPATH=/tmp/site:$PWD timeout -s KILL 90 python3 -m pytest -q tests/test_cuda_ext_paths.py \
  tests/test_cln.py --backend cuda_ext -k "not rmsnorm" > "$OUT/test-cln.log" 2>&1
echo "cln tests rc=$?"; tail -2 "$OUT/test-cln.log"
for rep in 1 2; do
  for v in a b; do
    dir=$PWD; [ $v = a ] && dir=$PWD/exp_a
    (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout -s KILL 50 python3 -m bench.tune \
      --backend cuda_ext --ops cln --quick --parts shapes,long) > "$OUT/ab-$v-$rep.log" 2>&1
    echo "== $v ($rep)"; cat "$OUT/ab-$v-$rep.log"
  done
done
