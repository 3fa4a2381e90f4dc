#!/usr/bin/env bash
# Session 55's GPU calls (NOTES 56).
#   first: the block-partials branch (cuda_ext's streaming backward summing dgamma / dbeta per
#          block; its tree unpacked into ab_bp/, main's into ab_bp/ab_old/, both untracked):
#          both extensions built in parallel, the branch's cuda_ext cLN tests into
#          $OUT/test-bp.log, bench.tune's default fwd+bwd at the three target shapes alternated
#          old / new / old / new into $OUT/abbp-{old,new}-{1,2}.log; then, if under 340 s so far,
#          the teaching-size backend's benchmark (gpu_s54.sh minimal-bench: its new backward
#          timed for the first time). Archived into $OUT/s55-first.tgz.
#     mkdir ab_bp && git archive cuda-ext-block-partials | tar -x -C ab_bp --exclude=bench/results
#     mkdir ab_bp/ab_old && git archive main | tar -x -C ab_bp/ab_old --exclude=bench/results
#   shift: the cln-shift-short branch (the float32 forward's frame sums about a shift in the
#          first C frames only; its tree unpacked into ab_ss/, main's into ab_ss/ab_old/): the
#          branch's cuda_ext built, its cLN tests on every backend (test_cln with the DC cases,
#          the Triton paths' shift tests, the cuda_ext paths) into $OUT/test-ss.log, then
#          bench.tune's default Triton float32 forward at the three target shapes and the seed
#          alternated old / new / old / new into $OUT/abss-{old,new}-{1,2}.log. Archived into
#          $OUT/s55-shift.tgz.
#     mkdir ab_ss && git archive cln-shift-short | tar -x -C ab_ss --exclude=bench/results
#     mkdir ab_ss/ab_old && git archive main | tar -x -C ab_ss/ab_old --exclude=bench/results
#   tests: the README's `make test` on main (cuda_ext build included) into $OUT/make-test.log;
#          archived into $OUT/s55-tests.tgz.
#   OUT=out bash bench/gpu_s55.sh first|shift|tests
set -uo pipefail
case "${1:-}" in
  first)
    t0=$(date +%s)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    gpu_build_tree ab_bp/ab_old & gpu_build_tree ab_bp & wait
    echo "built at $(( $(date +%s) - t0 )) s"
    gpu_in_tree ab_bp timeout -s KILL 150 python3 -m pytest -q -p no:cacheprovider \
      $(gpu_xdist_args) tests/test_cuda_ext_paths.py tests/test_cln.py --backend cuda_ext \
      > "$OUT/test-bp.log" 2>&1
    echo "bp tests rc=$? at $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/test-bp.log"
    grep -E "FAILED|ERROR" "$OUT/test-bp.log" | head
    gpu_ab_rounds abbp "cuda_ext cln\|copy" "old:ab_bp/ab_old new:ab_bp" timeout 80 \
      python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes --modes fwd_bwd \
      --variants default --dtype fp32,bf16
    echo "bp ab done at $(( $(date +%s) - t0 )) s"
    if [ $(( $(date +%s) - t0 )) -lt 340 ]; then
      mkdir -p "$OUT/minimal"
      OUT=$OUT/minimal bash bench/gpu_s54.sh minimal-bench
    fi
    gpu_archive s55-first
    ;;
  shift)
    t0=$(date +%s)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    gpu_build_tree ab_ss
    echo "built at $(( $(date +%s) - t0 )) s"
    gpu_in_tree ab_ss timeout -s KILL 240 python3 -m pytest -q -p no:cacheprovider \
      $(gpu_xdist_args) tests/test_cln.py tests/test_cuda_ext_paths.py \
      tests/test_triton_paths.py::test_shift_tiles_rule \
      tests/test_triton_paths.py::test_shift_fixes_the_first_frames_at_a_dc_offset \
      > "$OUT/test-ss.log" 2>&1
    echo "ss tests rc=$? at $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/test-ss.log"
    grep -E "FAILED|ERROR" "$OUT/test-ss.log" | head
    gpu_ab_rounds abss "cln\|copy" "old:ab_ss/ab_old new:ab_ss" timeout 80 \
      python3 -m bench.tune --backend triton --ops cln --parts shapes,seed --modes fwd \
      --seed-modes fwd --variants default --dtype fp32
    echo "ss ab done at $(( $(date +%s) - t0 )) s"
    gpu_archive s55-shift
    ;;
  tests)
    source bench/gpu_env.sh
    gpu_make_test 420
    gpu_archive s55-tests
    ;;
  *) echo "usage: $0 first|shift|tests" >&2; exit 2 ;;
esac
