#!/usr/bin/env bash
# Session 52: cuda_ext's streaming backward summing its dgamma / dbeta partials per block (one
# row per block, in shared memory) instead of one row per tile.  One call:
#   1. both extensions built in parallel: this tree and the one before the change (`git archive`
#      of the commit named in ab_old/REV, unpacked into ab_old/, untracked, carried along);
#   2. this tree's cuda_ext cLN tests on the GPU (tests/test_cuda_ext_paths.py, every family
#      and forced plan, and tests/test_cln.py with --backend cuda_ext) into $OUT/test-s52b.log;
#   3. bench.tune's default fwd+bwd, fp32 and bf16, at the three target shapes, alternated
#      old / new / old / new into $OUT/ab52b-{old,new}-{1,2}.log;
#   4. the compiler probe of gpu_s52.sh (`probe`: CXX=/opt/gcc/bin/g++ and the backward's
#      stall reasons under ncu, now on the new code) into $OUT/probe/.
# Archived into $OUT/s52b.tgz.
#   mkdir ab_old && git archive REV | tar -x -C ab_old --exclude=bench/results && echo REV > ab_old/REV
#   OUT=out bash bench/gpu_s52b.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
date +%T
build() {  # $1: the tree
  (cd "$1" && PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.torch_extensions \
    timeout 200 python3 -c "import backends.cuda_ext.kernels as k; k.extension()" 2>&1 | tail -2)
}
build ab_old & build . & wait
date +%T
timeout -s KILL 200 python3 -m pytest -q -n 4 tests/test_cuda_ext_paths.py tests/test_cln.py \
  --backend cuda_ext > "$OUT/test-s52b.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-s52b.log"; grep -E "FAILED|ERROR" "$OUT/test-s52b.log" | head
date +%T
for r in 1 2; do
  for side in old new; do
    tree=.; [ "$side" = old ] && tree=ab_old
    (cd "$tree" && PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.torch_extensions \
      timeout 90 python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes \
      --modes fwd_bwd --variants default --dtype fp32,bf16) > "$OUT/ab52b-$side-$r.log" 2>&1
    echo "$side round $r rc=$?"; grep "cuda_ext cln\|copy" "$OUT/ab52b-$side-$r.log"
  done
done
date +%T
mkdir -p "$OUT/probe"
OUT=$OUT/probe timeout -s KILL 150 bash bench/gpu_s52.sh probe
date +%T
gpu_archive s52b
ls -la "$OUT"
