#!/usr/bin/env bash
# Session 14, third experiment call: Triton cLN with the tuple sums and scans (CLN_FUSED_SUMS,
# the default) against three separate ones ("unfused sums"), two rounds in one call, then the
# Triton cLN tests on the GPU.
#   OUT=out bash bench/gpu_s14c.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for r in 1 2; do
  timeout -s KILL ${T_TUNE:-110} python3 -m bench.tune --backend triton --ops cln \
    --parts shapes,seed --variants "default,unfused sums" > "$OUT/ab-fused-$r.log" 2>&1
  echo "round $r rc=$?"; cat "$OUT/ab-fused-$r.log"
done
timeout -s KILL ${T_TESTS:-240} python3 -m pytest -q -p no:cacheprovider tests \
  -k "(triton or pairs or schedule) and not rmsnorm" > "$OUT/test-triton-cln.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton-cln.log"
