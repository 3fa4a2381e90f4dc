#!/usr/bin/env bash
# Session 18, final calls on the final code (the Triton fp32 forward's wide rows at C = 257..512):
#   OUT=out bash bench/gpu_s18_final.sh bench   cLN with its peers (both backends, eager,
#                                               torch.compile), same-size copies and the long
#                                               sequence, then the Triton cLN tests on the GPU
#   OUT=out bash bench/gpu_s18_final.sh tests   make test-all (every backend, every test)
set -uo pipefail
case "${1:-}" in
  tests) source bench/gpu_env.sh; T_TESTS=${T_TESTS:-500} gpu_test_all ;;
  bench)
    source bench/gpu_env.sh; gpu_bench_cln 200; gpu_copy_long 100
    timeout -s KILL 200 python3 -m pytest -q tests/test_triton_paths.py tests/test_cln.py \
      -k "triton or wide or schedule or pairs" > "$OUT/test-triton-cln.log" 2>&1
    echo "triton cln tests rc=$?"; tail -3 "$OUT/test-triton-cln.log" ;;
  *) echo "usage: $0 tests|bench" >&2; exit 2 ;;
esac
