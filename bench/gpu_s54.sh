#!/usr/bin/env bash
# Session 54's GPU calls (`tests` ran at 02:27, `final` at 03:39; NOTES 55.9, 55.9b).
#   minimal: the teaching-size Triton cLN (backends/triton_minimal) on the GPU: its part of the
#            shared harness (test_cln, test_compile, test_errors, the negative controls) and its
#            corner tests into $OUT/minimal-tests.log, then the cLN benchmark of triton,
#            triton_minimal and torch.compile of the eager formula in one run (CUDA graphs, fwd
#            and fwd+bwd, fp32 and bf16, the three targets and the seed) into $OUT; archived into
#            $OUT/s54-minimal.tgz. About 3 minutes warm (the Triton compiles are most of it).
#   tests:   the cuda_ext build, the README's `make test` (every backend on the GPU, the new
#            backend's share of the harness included) into $OUT/make-test.log, then the same
#            benchmark as `minimal`; archived into $OUT/s54-tests.tgz.
#   final:   one call for what a short budget allows, in this order: the teaching-size
#            backend's GPU tests after its fixes (test_triton_minimal, test_devices, test_cln)
#            into $OUT/minimal-fix.log; the shift branch (its tree unpacked into ab_shift/, main's
#            into ab_shift/ab_old/, both untracked) timed against main by gpu_s53.sh's `ab`
#            (archived into $OUT/s53-ab.tgz), then the branch's test_cln on every backend into
#            $OUT/test-shift-cln.log; the teaching-size benchmark again if under 470 s so far.
#     mkdir ab_shift && git archive cln-fp32-shift | tar -x -C ab_shift --exclude=bench/results
#     mkdir ab_shift/ab_old && git archive main | tar -x -C ab_shift/ab_old --exclude=bench/results
#   minimal-bench: only the benchmark of `minimal` (session 55).
#   OUT=out bash bench/gpu_s54.sh minimal|minimal-bench|tests|final
set -uo pipefail
# The cLN of triton, triton_minimal and torch.compile in one run into $OUT: $1 the tag, $2 the
# time limit in seconds.
bench_minimal() {
  timeout -s KILL "$2" python3 -m bench --op cln --backend triton,triton_minimal \
    --peers compile --mode fwd,fwd_bwd --dtype fp32,bf16 \
    --shapes 16x512x4000,4x256x16000,2x128x64000,80x64x301 --cuda-graph all --budget 0.15 \
    --out "$OUT" --tag "$1" > "$OUT/bench-$1.log" 2>&1
  echo "minimal bench rc=$?"; grep -E "triton_minimal" "$OUT/bench-$1.log"
}
case "${1:-}" in
  minimal)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    timeout -s KILL 240 python3 -m pytest -q -p no:cacheprovider --backend triton_minimal \
      $(gpu_xdist_args) tests/test_cln.py tests/test_compile.py tests/test_errors.py \
      tests/test_negative_controls.py tests/test_triton_minimal.py > "$OUT/minimal-tests.log" 2>&1
    echo "minimal tests rc=$?"; tail -4 "$OUT/minimal-tests.log"
    bench_minimal minimal 240
    gpu_archive s54-minimal
    ;;
  minimal-bench)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    bench_minimal minimal 240
    ;;
  tests)
    source bench/gpu_env.sh
    gpu_make_test 380
    bench_minimal minimal 170
    gpu_archive s54-tests
    ;;
  final)
    t0=$(date +%s)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    NORMK_TEST_SECOND_GPU=0 timeout -s KILL 110 python3 -m pytest -q -p no:cacheprovider \
      $(gpu_xdist_args) --backend triton_minimal tests/test_triton_minimal.py \
      tests/test_devices.py tests/test_cln.py > "$OUT/minimal-fix.log" 2>&1
    echo "minimal tests rc=$? at $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/minimal-fix.log"
    grep FAILED "$OUT/minimal-fix.log" | head
    cp -r .whl ab_shift/
    (cd ab_shift && OUT=$OUT bash bench/gpu_s53.sh ab)
    echo "shift ab done at $(( $(date +%s) - t0 )) s"
    (cd ab_shift && timeout -s KILL 110 python3 -m pytest -q -p no:cacheprovider \
      $(gpu_xdist_args) tests/test_cln.py > "$OUT/test-shift-cln.log" 2>&1)
    echo "shift test_cln rc=$? at $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/test-shift-cln.log"
    grep FAILED "$OUT/test-shift-cln.log" | head
    if [ $(( $(date +%s) - t0 )) -lt 470 ]; then
      bench_minimal minimal2 100
    fi
    ;;
  *) echo "usage: $0 minimal|minimal-bench|tests|final" >&2; exit 2 ;;
esac
