#!/usr/bin/env bash
# Session 36's calls, each within the 600-s limit:
# The warp-tile kernel was removed in session 37 (NOTES 37): check out ed878e7 to rerun these.
#   OUT=out bash bench/gpu_s36.sh warp    # the forward's warp-tile kernel (cuda_ext,
#                                         # include/cln_warp.cuh): its path tests, then
#                                         # bench.tune's forward at the target shapes, two
#                                         # rounds, against the default and Triton's default
#                                         # (VARIANTS: the cuda_ext variants; the first call,
#                                         # at 63e344f, ran "default,warp,warp no stagger,warp
#                                         # stagger 5us": -s36a-tune-warp36-*.log; the second,
#                                         # "default,warp,warp G128,warp G64": -s36b-)
#   OUT=out bash bench/gpu_s36.sh diag    # its prefix wait left out (NORMK_CLN_DIAG = 1)
#                                         # beside the streaming kernel's levels (-s36c-)
#   OUT=out bash bench/gpu_s36.sh ld      # its tile loads by plain ld.global: tests, levels,
#                                         # ncu at (2, 128, 64000) fp32 (-s36d-)
#   OUT=out bash bench/gpu_s36.sh warp2   # warps along the channels too (128-byte lines per
#                                         # load): tests, tune rounds with the register-tile
#                                         # kernels and Triton, the no-wait level (-s36e-)
set -uo pipefail
source bench/gpu_env.sh
# The warp-tile forward's path tests (tests/test_cuda_ext_paths.py -k warp) into $OUT/test-warp.log;
# the log's last $1 lines printed (default 2).
warp_tests() {
  local par; par=$(gpu_xdist_args)
  # shellcheck disable=SC2086
  timeout -s KILL 200 python3 -m pytest -q $par tests/test_cuda_ext_paths.py -k warp \
    > "$OUT/test-warp.log" 2>&1
  echo "warp tests rc=$?"; tail -"${1:-2}" "$OUT/test-warp.log"
}
case "${1:-}" in
  warp)
    warp_tests 4
    for r in 1 2; do
      timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend cuda_ext --ops cln \
        --parts shapes --modes fwd --dtype fp32,bf16 \
        --variants "${VARIANTS:-default,warp,warp G128,warp G64}" \
        > "$OUT/tune-warp36-$r.log" 2>&1
      echo "round $r rc=$?"
    done
    timeout -s KILL 90 python3 -m bench.tune --backend triton --ops cln --parts shapes \
      --modes fwd --dtype fp32,bf16 --variants default > "$OUT/tune-warp36-triton.log" 2>&1
    echo "triton rc=$?"
    head -3 "$OUT/tune-warp36-1.log"
    grep -h "cln" "$OUT"/tune-warp36-*.log | sort -k3,6 -s
    gpu_archive s36-warp ;;
  diag)
    # The warp-tile forward with its prefix wait left out (NORMK_CLN_DIAG = 1) beside the
    # streaming kernel's levels, and its path tests again.
    warp_tests
    timeout -s KILL 200 python3 -m bench.diag_cln_stream --variants \
      "stream,stream diag1 no-wait,stream diag2 load-store,warp,warp diag1 no-wait" \
      > "$OUT/diag-warp.log" 2>&1
    echo "diag rc=$?"; cat "$OUT/diag-warp.log"
    gpu_archive s36-diag ;;
  ld)
    # Tile loads by plain ld.global (kWarpLd): the path tests, the diag levels, and ncu of one
    # warp-tile forward at (2, 128, 64000) fp32.
    warp_tests
    timeout -s KILL 150 python3 -m bench.diag_cln_stream --variants "warp,warp diag1 no-wait" \
      > "$OUT/diag-warp.log" 2>&1
    echo "diag rc=$?"; cat "$OUT/diag-warp.log"
    timeout -s KILL 150 ncu --clock-control none -k regex:cln_fwd_warp_kernel --launch-skip 1 -c 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --section SchedulerStats --section LaunchStats \
      python3 -c "import torch; from backends.cuda_ext import kernels as K; \
from bench.ablate_cln import run_once; K.CLN_WARP_TILES = 2; \
run_once('cuda_ext', (2, 128, 64000), torch.float32)" > "$OUT/ncu-warp.txt" 2>&1
    echo "ncu rc=$?"
    grep -E "Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Issued Ipc|Eligible Warps|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|No Eligible|Stall" "$OUT/ncu-warp.txt" | head -40
    gpu_archive s36-ld ;;
  warp2)
    # The warp-tile forward with warps along the channels too (TL = 8: 128-byte lines per
    # load): its path tests, bench.tune's forward at the targets (two rounds, against the
    # default streaming kernels and the register-tile kernels), Triton's default, and the
    # diag level without the prefix wait.
    warp_tests
    for r in 1 2; do
      timeout -s KILL 150 python3 -m bench.tune --backend cuda_ext --ops cln --parts shapes \
        --modes fwd --dtype fp32,bf16 --variants "default,warp,warp no stagger,regs" \
        > "$OUT/tune-warp36-$r.log" 2>&1
      echo "round $r rc=$?"
    done
    timeout -s KILL 90 python3 -m bench.tune --backend triton --ops cln --parts shapes \
      --modes fwd --dtype fp32,bf16 --variants default > "$OUT/tune-warp36-triton.log" 2>&1
    echo "triton rc=$?"
    head -1 "$OUT/tune-warp36-1.log"
    grep -h "cln" "$OUT"/tune-warp36-*.log | sort -k3,6 -s
    timeout -s KILL 100 python3 -m bench.diag_cln_stream --variants "warp,warp diag1 no-wait" \
      > "$OUT/diag-warp.log" 2>&1
    echo "diag rc=$?"; cat "$OUT/diag-warp.log"
    gpu_archive s36-warp2 ;;
  *) echo "usage: $0 warp|diag|ld|warp2" >&2; exit 2 ;;
esac
ls -la "$OUT"
