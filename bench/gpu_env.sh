# Sourced by the bench/gpu_*.sh scripts: the environment of one call on the GPU machine.
# That machine has CUDA torch/triton/cupy/numba but numpy 2.5 (breaks numba-cuda): the wheels
# in .whl/ (../shared/tools/gpu-wheels.sh) fix that and add Liger-Kernel.
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
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv \
  | tee "$OUT/gpu.txt"
# Build the CUDA extension first, so its one-time compile is not inside a test's time limit
# (SKIP_CUDA_BUILD=1: a call that runs no cuda_ext code).
if [ "${SKIP_CUDA_BUILD:-0}" != 1 ]; then
  t0=$(date +%s)
  timeout 200 python3 -c "import backends.cuda_ext.kernels as k; k.extension()" 2>&1 | tail -3
  echo "cuda_ext build: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
fi

# Every test on the GPU (make test-all) into $OUT/test-all.log; more pytest arguments in
# TEST_ARGS (default --durations=15).  The CPU emulator self-test of cuda_ext is a CPU test (CI
# runs it); it is left out here.
# With pytest-xdist in .whl/ (gpu-wheels.sh 'pytest-xdist==3.8.0' 'execnet==2.1.1') the tests
# run in XDIST processes (default 4): a cold machine spends most of the serial run's 360+ s
# compiling Triton kernels on one core of 16.
# pytest's arguments for XDIST processes (default 4), empty where pytest-xdist is missing.
gpu_xdist_args() {
  if [ "${XDIST:-4}" != 0 ] && python3 -c "import xdist" 2>/dev/null; then echo "-n ${XDIST:-4}"; fi
}
gpu_test_all() {
  local par; par=$(gpu_xdist_args)
  # shellcheck disable=SC2086
  PYTEST_ADDOPTS="--deselect tests/test_cuda_ext_build.py::test_kernels_on_cpu_emulator $par ${TEST_ARGS:---durations=15}" \
    timeout -s KILL ${T_TESTS:-330} make test-all PY=python3 > "$OUT/test-all.log" 2>&1
  local rc=$?
  echo "test-all rc=$rc (${par:-serial})"; grep -E "passed|failed|error" "$OUT/test-all.log" | tail -3
  return $rc
}

# make test-all in XDIST processes (default 4), verbose, 300 s a test, the whole run within
# T_TESTS (default $1 s), its failures and time printed.
gpu_tests_timed() {
  local t0; t0=$(date +%s)
  XDIST=${XDIST:-4} T_TESTS=${T_TESTS:-$1} TEST_ARGS="-vv --durations=40 --timeout=300" gpu_test_all
  echo "tests: $(( $(date +%s) - t0 )) s"
  grep -E "FAILED|ERROR" "$OUT/test-all.log" | head -20
}

# The README's `make test` on the GPU machine (pytest-xdist processes as on any machine; the
# placement tests dry-run on one GPU) within $1 s (default 440) into $OUT/make-test.log.
gpu_make_test() {
  local t0; t0=$(date +%s)
  NORMK_TEST_SECOND_GPU=0 PYTEST_ADDOPTS="--durations=25" \
    timeout -s KILL "${1:-440}" make test PY=python3 > "$OUT/make-test.log" 2>&1
  echo "make test rc=$? in $(( $(date +%s) - t0 )) s"
  grep -E "passed|failed|FAILED|ERROR" "$OUT/make-test.log" | tail -8
}

# A session's whole-suite call: gpu_tests_timed within $2 s, then everything under $OUT into the
# archive $OUT/$1.tgz.
gpu_tests_call() {
  gpu_tests_timed "$2"
  gpu_archive "$1"
}

# The Triton cLN tests on the GPU (test_cln, test_triton_paths, test_negative_controls) into
# $OUT/test-triton.log; the limit is T_TESTS (default 200 s).
gpu_test_triton_cln() {
  local par; par=$(gpu_xdist_args)
  timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q $par --backend triton tests/test_cln.py \
    tests/test_triton_paths.py tests/test_negative_controls.py > "$OUT/test-triton.log" 2>&1
  echo "tests rc=$?"; tail -3 "$OUT/test-triton.log"
}

# The Triton path tests (PATHS_TEST: another file, e.g. tests/test_cuda_ext_paths.py) selected
# by pytest -k "$2" into $OUT/test-$1.log (limit T_TESTS, 120 s).
gpu_test_paths() {
  timeout -s KILL ${T_TESTS:-120} python3 -m pytest -q "${PATHS_TEST:-tests/test_triton_paths.py}" -k "$2" \
    > "$OUT/test-$1.log" 2>&1
  echo "tests $1 rc=$?"; tail -3 "$OUT/test-$1.log"
}

# bench.tune's seed-shape variants of one backend ($2, default triton) into $OUT/tune-$1.log
# (modes SEED_MODES, default fwd).
gpu_tune_seed() {
  timeout -s KILL 100 python3 -m bench.tune --backend "${2:-triton}" --ops cln --parts seed \
    --seed-modes "${SEED_MODES:-fwd}" > "$OUT/tune-$1.log" 2>&1
  echo "seed rc=$?"; grep cln "$OUT/tune-$1.log"
}

# The chained-launch (PDL) tests of both compiled backends (test_pdl_leaves_the_output_unchanged)
# into $OUT/test-pdl.log.
gpu_test_pdl() {
  local par; par=$(gpu_xdist_args)
  timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q $par tests/test_cuda_ext_paths.py \
    tests/test_triton_paths.py -k pdl > "$OUT/test-pdl.log" 2>&1
  echo "pdl tests rc=$?"; tail -3 "$OUT/test-pdl.log"
}

# A command ($2...) run in another tree of the project ($1, e.g. an A/B's old side unpacked by
# `git archive` into ab_old/), with that tree on PYTHONPATH and its own extension cache.
gpu_in_tree() {
  local tree=$1; shift
  (cd "$tree" && PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.torch_extensions "$@")
}

# The cuda_ext extension of the tree $1 built (its last two lines of output).
gpu_build_tree() {
  gpu_in_tree "$1" timeout 200 python3 -c "import backends.cuda_ext.kernels as k; k.extension()" \
    2>&1 | tail -2
}

# Two trees timed alternately in one call (rounds 1 and 2 of side A, then side B): $1 the log
# prefix ($OUT/$1-SIDE-ROUND.log), $2 a grep pattern for the lines echoed from each log, $3 the
# sides as "NAME:TREE NAME:TREE" (e.g. "old:ab_old new:."), the command in $4... (run by
# gpu_in_tree in each side's tree).
gpu_ab_rounds() {
  local prefix=$1 pat=$2 sides=$3 r side; shift 3
  for r in 1 2; do
    for side in $sides; do
      gpu_in_tree "${side#*:}" "$@" > "$OUT/$prefix-${side%%:*}-$r.log" 2>&1
      echo "${side%%:*} round $r rc=$?"; grep -- "$pat" "$OUT/$prefix-${side%%:*}-$r.log"
    done
  done
}

# Everything under $OUT into one archive $OUT/$1.tgz (a call returns at most 8 files).
gpu_archive() {
  tar czf "/tmp/$1.tgz" -C "$OUT" . && rm -rf "${OUT:?}"/* && mv "/tmp/$1.tgz" "$OUT/"
}

# The cLN of the compiled backends (and the teaching-size one) with eager and torch.compile in one run (CUDA graphs) at the
# target and seed shapes, into $OUT (the final calls' benchmark); $1: the time limit in seconds
# unless T_BENCH is set.
gpu_bench_cln() {
  timeout -s KILL ${T_BENCH:-$1} python3 -m bench --op cln --backend triton,cuda_ext,triton_minimal \
    --peers eager,compile --mode fwd,fwd_bwd --dtype fp32,bf16 \
    --shapes 16x512x4000,4x256x16000,2x128x64000,80x64x301 --cuda-graph all --budget 0.15 \
    --out "$OUT" --tag cln-peers > "$OUT/bench-cln.log" 2>&1
  echo "cln bench rc=$?"; tail -45 "$OUT/bench-cln.log"
}

# The same-size copy of each cLN target and the long sequence (bench.tune --quick); $1: the time
# limit in seconds unless T_LONG is set.
gpu_copy_long() {
  timeout -s KILL ${T_LONG:-$1} python3 -m bench.tune --backend cuda_ext,triton --ops cln \
    --quick --parts copy,long > "$OUT/tune-copy-long.log" 2>&1; cat "$OUT/tune-copy-long.log"
}

# The README's main job, make bench at the target shapes with every backend and peer and the
# plots, into $OUT; $1: the time limit in seconds unless T_BENCH is set.
gpu_make_bench() {
  timeout -s KILL ${T_BENCH:-$1} make bench PY=python3 \
    BENCH_ARGS="--shapes targets --dtype fp32,bf16 --mode fwd,fwd_bwd --plot --cuda-graph all --out $OUT" \
    > "$OUT/bench.log" 2>&1
  echo "make bench rc=$?"; grep -hE "ptxas|Copy bandwidth" "$OUT"/nvidia-*.md; tail -4 "$OUT/bench.log"
}

# A session's final benchmark: the cLN benchmark with its peers (the README's cLN table), then
# the README's main job (make bench at the target shapes, every backend and peer, plots), all
# in one archive $OUT/$1.tgz (a call returns at most 8 files).
gpu_final_bench() {
  gpu_bench_cln 200
  gpu_make_bench 300
  gpu_archive "$1"
  ls -la "$OUT"
}

# ROUNDS (default 2) rounds of bench.tune's Triton (TUNE_BACKEND: cuda_ext) cLN variants at the
# target shapes, in separate processes, into $OUT/tune-$1-{1,2,...}.log, then the lines sorted by
# case. $1: log name, $2: the variants (comma-separated), $3: the modes (fwd, fwd_bwd); the limit
# per round is T_TUNE (default 200 s), the dtypes TUNE_DTYPE (default fp32,bf16), more arguments
# TUNE_ARGS (e.g. --regs).
gpu_tune_rounds() {
  local r
  for r in $(seq 1 "${ROUNDS:-2}"); do
    # shellcheck disable=SC2086
    timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend "${TUNE_BACKEND:-triton}" --ops cln \
      --parts shapes --modes "$3" --variants "$2" --dtype "${TUNE_DTYPE:-fp32,bf16}" \
      ${TUNE_ARGS:-} > "$OUT/tune-$1-$r.log" 2>&1
    echo "round $r rc=$?"
  done
  head -2 "$OUT/tune-$1-1.log"
  grep -h "cln" "$OUT"/tune-"$1"-*.log | sort -k3,6 -s
}

# A knob's A/B call: its GPU path tests (pytest -k "$2" into $OUT/test-$1.log, limit T_TESTS,
# default 120 s), then two rounds of bench.tune's variants $3 in modes $4 with their registers
# (--regs; limit T_TUNE per round, default 220 s) into $OUT/tune-$1-{1,2}.log.
gpu_paths_then_tune() {
  date +%T
  T_TESTS=${T_TESTS:-120} gpu_test_paths "$1" "$2"
  date +%T
  T_TUNE=${T_TUNE:-220} TUNE_ARGS=${TUNE_ARGS:---regs} gpu_tune_rounds "$1" "$3" "$4"
  date +%T
  ls -la "$OUT"
}

# gpu_paths_then_tune ($1-$4) after a negative control: python3 -m $5 into $OUT/$6.log (its
# exit status 0: the deliberately broken kernel was caught).
gpu_neg_paths_tune() {
  timeout -s KILL ${T_NEG:-150} python3 -m "$5" > "$OUT/$6.log" 2>&1
  echo "negative control $5 rc=$? (0: every broken kernel was caught)"; cat "$OUT/$6.log"
  T_TESTS=${T_TESTS:-150} gpu_paths_then_tune "$1" "$2" "$3" "$4"
}

# make test-all, then the cLN benchmark with its peers, in one archive $OUT/$1.tgz (a session's
# first final call).
gpu_final_all() {
  T_TESTS=${T_TESTS:-300} gpu_test_all
  gpu_bench_cln 150
  gpu_archive "$1"
}

# The README's main job alone (make bench at the target shapes, every backend and peer, plots)
# in one archive $OUT/$1.tgz (a session's second final call).
gpu_main_job() {
  gpu_make_bench 260
  gpu_archive "$1"
}

# A session's final call on the final code: $1 = all (make test-all, then the cLN benchmark with
# its peers: the README's cLN table) or main (the README's main job), $2 = the session's tag;
# the archive is $OUT/$2-$1.tgz.
gpu_final_call() {
  case "$1" in
    all) gpu_final_all "$2-all" ;;
    main) gpu_main_job "$2-main" ;;
    *) echo "usage: $0 all|main" >&2; return 2 ;;
  esac
}

# A session's two final calls on one warm machine, each within the 600-s limit: $1 = tests
# (make test-all, the whole suite, 4 xdist workers) or bench (the cLN benchmark with its peers,
# the README's cLN table, then the README's main job), $2 = the session's tag; the archive is
# $OUT/$2-final-$1.tgz.
gpu_final_tests_bench() {
  case "$1" in
    tests) gpu_tests_call "$2-final-tests" 450 ;;
    bench)
      gpu_bench_cln 200
      gpu_make_bench 300
      gpu_archive "$2-final-bench" ;;
    *) echo "usage: $0 tests|bench" >&2; return 2 ;;
  esac
  ls -la "$OUT"
}

# The Gluon shared-memory-tile cLN forward prototype (bench/gluon_cln) checked and timed against
# the Triton forward: bench.gluon_cln.run's variants $2 (comma-separated) at the shapes $3
# (default: the three cLN targets) into $OUT/$1.log; the limit is T_GL (default 420 s).
gpu_gluon_run() {
  local shapes=()
  if [ -n "${3:-}" ]; then shapes=(--shapes "$3"); fi
  timeout -s KILL "${T_GL:-420}" python3 -m bench.gluon_cln.run "${shapes[@]}" --variants "$2" \
    > "$OUT/$1.log" 2>&1
  echo "gluon rc=$?"; tail -80 "$OUT/$1.log"
}

# The float32 frame sums' shift on the GPU (README Numerics): its negative control and the DC
# tests of every backend into $OUT/test-check.log, then bench.probe_dc_first_frames with the
# shift off into $OUT/dc-noshift.log.
gpu_shift_check() {
  timeout -s KILL 90 python3 -m pytest -q -p no:cacheprovider \
    tests/test_triton_paths.py::test_frame_shift_is_what_keeps_the_first_frames_exact \
    "tests/test_cln.py::test_dc_offset_many_channels_few_frames" > "$OUT/test-check.log" 2>&1
  echo "shift tests rc=$?"; tail -2 "$OUT/test-check.log"
  timeout -s KILL 60 python3 -m bench.probe_dc_first_frames --noshift --draws 2 \
    --backends triton,cuda_ext > "$OUT/dc-noshift.log" 2>&1
  echo "dc probe (no shift) rc=$?"; cat "$OUT/dc-noshift.log"
}

# The cuda_ext extensions of ab_old/ and of this tree, built at once.
gpu_build_ab() {
  local t0; t0=$(date +%s)
  gpu_build_tree ab_old & gpu_build_tree . & wait
  echo "builds: $(( $(date +%s) - t0 )) s"
}

# A cuda_ext A/B against main's tree unpacked into ab_old/ (gpu_s61.sh ab, gpu_s62.sh check):
# both extensions built at once; this tree's cuda_ext cLN tests on the GPU
# (gpu_cuda_ext_tests, limit $3 s) into $OUT/$2.log; then gpu_cuda_ext_rounds $1.
gpu_cuda_ext_ab() {
  local t0; t0=$(date +%s)
  gpu_build_ab
  gpu_cuda_ext_tests "$2" "$3"
  gpu_cuda_ext_rounds "$1"
  echo "done at $(( $(date +%s) - t0 )) s"
}

# This tree's cuda_ext cLN tests on the GPU (tests/test_cuda_ext_paths.py, tests/test_cln.py
# --backend cuda_ext) within $2 s into $OUT/$1.log.
gpu_cuda_ext_tests() {
  local t0; t0=$(date +%s)
  # shellcheck disable=SC2046
  timeout -s KILL "$2" python3 -m pytest -q -p no:cacheprovider $(gpu_xdist_args) \
    tests/test_cuda_ext_paths.py tests/test_cln.py --backend cuda_ext > "$OUT/$1.log" 2>&1
  echo "tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/$1.log"
  grep -E "FAILED|ERROR" "$OUT/$1.log" | head
}

# bench.tune's default cuda_ext cLN (modes AB_MODES, default fwd_bwd; T_AB s a run, default
# 85), fp32 and bf16, at the three target shapes, ab_old's tree and this one alternated old /
# new / old / new into $OUT/$1-SIDE-ROUND.log (both extensions built before).
gpu_cuda_ext_rounds() {
  gpu_ab_rounds "$1" "cuda_ext cln\|copy" "old:ab_old new:." timeout "${T_AB:-85}" python3 -m bench.tune \
    --backend cuda_ext --ops cln --parts shapes --modes "${AB_MODES:-fwd_bwd}" --variants default \
    --dtype fp32,bf16
}

# ncu (no clock control) of the second of two Triton bf16 forwards (bench.ablate_cln --once) at
# (16, 512, 4000) and (4, 256, 16000), ablation levels $2 (e.g. "0 3"): duration, instructions,
# issue-active cycles, warps active, DRAM throughput, into $OUT/$1.txt (gpu_s62.sh ncu,
# gpu_s63.sh ncu).
gpu_ncu_bf16_levels() {
  local s lv M=gpu__time_duration.sum,smsp__inst_executed.sum
  M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
  M=$M,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__thread_inst_executed.sum
  for s in 16x512x4000 4x256x16000; do
    for lv in $2; do
      echo "== bf16 $s level $lv" | tee -a "$OUT/$1.txt"
      timeout -s KILL 60 ncu --clock-control none -k regex:_cln_fwd_kernel --launch-skip 1 -c 1 \
        --metrics "$M" python3 -m bench.ablate_cln --once bf16 --shape "$s" --level "$lv" 2>&1 \
        | grep -E "^\s+(gpu__|dram__|sm__|smsp__)|==PROF==|Error" | tee -a "$OUT/$1.txt"
    done
  done
}
