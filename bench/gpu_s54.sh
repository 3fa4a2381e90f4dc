#!/usr/bin/env bash
# Session 54's GPU call (none was lent in session 54; kept for the next session that has one).
#   minimal: the teaching-size Triton cLN (backends/triton_minimal) on the GPU: its part of the
#            shared harness (test_cln, test_compile, test_errors, the negative controls) and its
#            corner tests into $OUT/minimal-tests.log, then the cLN benchmark of triton,
#            triton_minimal and torch.compile of the eager formula in one run (CUDA graphs, fwd
#            and fwd+bwd, fp32 and bf16, the three targets and the seed) into $OUT; archived into
#            $OUT/s54-minimal.tgz. About 3 minutes warm (the Triton compiles are most of it).
#   tests:   the cuda_ext build, the README's `make test` (every backend on the GPU, the new
#            backend's share of the harness included) into $OUT/make-test.log, then the same
#            benchmark as `minimal`; archived into $OUT/s54-tests.tgz.
#   OUT=out bash bench/gpu_s54.sh minimal|tests
set -uo pipefail
case "${1:-}" in
  minimal)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    timeout -s KILL 240 python3 -m pytest -q -p no:cacheprovider --backend triton_minimal \
      $(gpu_xdist_args) tests/test_cln.py tests/test_compile.py tests/test_errors.py \
      tests/test_negative_controls.py tests/test_triton_minimal.py > "$OUT/minimal-tests.log" 2>&1
    echo "minimal tests rc=$?"; tail -4 "$OUT/minimal-tests.log"
    timeout -s KILL 240 python3 -m bench --op cln --backend triton,triton_minimal \
      --peers compile --mode fwd,fwd_bwd --dtype fp32,bf16 \
      --shapes 16x512x4000,4x256x16000,2x128x64000,80x64x301 --cuda-graph all --budget 0.15 \
      --out "$OUT" --tag minimal > "$OUT/bench-minimal.log" 2>&1
    echo "minimal bench rc=$?"; tail -40 "$OUT/bench-minimal.log"
    gpu_archive s54-minimal
    ;;
  tests)
    source bench/gpu_env.sh
    gpu_make_test 380
    timeout -s KILL 170 python3 -m bench --op cln --backend triton,triton_minimal \
      --peers compile --mode fwd,fwd_bwd --dtype fp32,bf16 \
      --shapes 16x512x4000,4x256x16000,2x128x64000,80x64x301 --cuda-graph all --budget 0.15 \
      --out "$OUT" --tag minimal > "$OUT/bench-minimal.log" 2>&1
    echo "minimal bench rc=$?"; tail -40 "$OUT/bench-minimal.log"
    gpu_archive s54-tests
    ;;
  *) echo "usage: $0 minimal|tests" >&2; exit 2 ;;
esac
