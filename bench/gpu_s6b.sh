#!/usr/bin/env bash
# Session 6, after the ncu of gpu_s6_ncu.sh: the RMSNorm backward row kernel with one rstd
# copy per warp in its ring, 16-byte dw partial stores, and the one-launch column sum.  GPU
# tests of the cuda_ext RMSNorm paths, kernel times per ring depth (torch.profiler), and the
# backward variants (bench.tune).
#   bash bench/gpu_s6b.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_TESTS:-150} python3 -m pytest -q -x tests/test_cuda_ext_paths.py \
  tests/test_rmsnorm.py --backend cuda_ext -k "rms or RMS" > "$OUT/test-rms.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-rms.log"
for s in 1 2 3; do
  for shape in 2048x4096 16384x8192; do
    timeout -s KILL 60 python3 -m bench.profile_rms_bwd --backend cuda_ext --shape $shape \
      --dtype bf16 --kernels 20 --set RMS_BWD_STAGES=$s 2>&1 | grep -v Warn | sed "s/^/S$s /"
  done
done > "$OUT/prof-rms-stages.log"
grep -E "row_kernel|colsum|total" "$OUT/prof-rms-stages.log" | cut -c1-100
timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend cuda_ext --ops rmsnorm \
  > "$OUT/tune-rmsnorm-row.log" 2>&1; cat "$OUT/tune-rmsnorm-row.log"
