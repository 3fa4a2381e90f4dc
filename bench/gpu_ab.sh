# Sourced by the two-tree A/B scripts (bench/gpu_s8d.sh, bench/gpu_s9c.sh): A is exp_a/, a copy
# of an earlier commit's code (`git archive REV backends common bench | tar -x -C exp_a`;
# untracked, so it travels with the working tree), B the working tree.
#   ab_setup        the GPU machine's wheels and environment, both extensions built side by side
#   ab_tests ARGS   B's cLN tests (pytest ARGS) into $OUT/test-cln.log
#   ab_tune ARGS    bench.tune ARGS alternating A, B, A, B into $OUT/ab-{a,b}-{1,2}.log
OUT=${OUT:-out}; mkdir -p "$OUT"

ab_setup() {
  # The wheels and environment of every GPU call, without its one-tree build.
  SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
  local build='import backends.cuda_ext.kernels as k; k.extension()' t0
  t0=$(date +%s)
  (cd exp_a && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -c "$build") > "$OUT/build-a.log" 2>&1 &
  PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -c "$build" > "$OUT/build-b.log" 2>&1
  wait; echo "builds: $(( $(date +%s) - t0 )) s"; tail -n 2 "$OUT/build-a.log" "$OUT/build-b.log"
}

ab_tests() {
  PYTHONPATH=/tmp/site:$PWD timeout -s KILL ${T_TESTS:-120} python3 -m pytest -q "$@" \
    > "$OUT/test-cln.log" 2>&1
  echo "cln tests rc=$?"; tail -n 2 "$OUT/test-cln.log"
}

ab_tune() {
  local rep v dir
  for rep in 1 2; do
    for v in a b; do
      dir=$PWD; [ $v = a ] && dir=$PWD/exp_a
      (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout -s KILL ${T_AB:-50} python3 -m bench.tune "$@") \
        > "$OUT/ab-$v-$rep.log" 2>&1
      echo "== $v ($rep)"; cat "$OUT/ab-$v-$rep.log"
    done
  done
}
