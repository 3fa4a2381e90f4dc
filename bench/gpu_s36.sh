#!/usr/bin/env bash
# Session 36's calls, each within the 600-s limit:
#   OUT=out bash bench/gpu_s36.sh warp    # the forward's warp-tile kernel (cuda_ext,
#                                         # include/cln_warp.cuh): its path tests, then
#                                         # bench.tune's forward at the target shapes, two
#                                         # rounds, against the default and Triton's default
set -uo pipefail
source bench/gpu_env.sh
case "${1:-}" in
  warp)
    par=$(gpu_xdist_args)
    # shellcheck disable=SC2086
    timeout -s KILL 200 python3 -m pytest -q $par tests/test_cuda_ext_paths.py -k warp \
      > "$OUT/test-warp.log" 2>&1
    echo "warp tests rc=$?"; tail -4 "$OUT/test-warp.log"
    for r in 1 2; do
      timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend cuda_ext --ops cln \
        --parts shapes --modes fwd --dtype fp32,bf16 \
        --variants "${VARIANTS:-default,warp,warp no stagger,warp stagger 5us}" \
        > "$OUT/tune-warp36-$r.log" 2>&1
      echo "round $r rc=$?"
    done
    timeout -s KILL 90 python3 -m bench.tune --backend triton --ops cln --parts shapes \
      --modes fwd --dtype fp32,bf16 --variants default > "$OUT/tune-warp36-triton.log" 2>&1
    echo "triton rc=$?"
    head -3 "$OUT/tune-warp36-1.log"
    grep -h "cln" "$OUT"/tune-warp36-*.log | sort -k3,6 -s
    gpu_archive s36-warp ;;
  *) echo "usage: $0 warp" >&2; exit 2 ;;
esac
ls -la "$OUT"
