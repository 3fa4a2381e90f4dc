#!/usr/bin/env bash
# Session 47, the final code (launch.Bound, integer keys by value, the shared keyword helper,
# no materialized state gradients): the Triton tests (the launcher's, cLN with every knob path,
# RMSNorm, the negative controls, torch.compile), the Conv-TasNet step eagerly with Triton's
# launches through JITFunction.run and direct alternating in one process, and the host times.
#   OUT=out bash bench/gpu_s47g.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
t0=$(date +%s)
timeout -s KILL 170 python3 -m pytest -q $(gpu_xdist_args) --backend triton \
  tests/test_triton_launch.py tests/test_cln.py tests/test_rmsnorm.py tests/test_triton_paths.py \
  tests/test_negative_controls.py tests/test_compile.py > "$OUT/test-triton.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/test-triton.log"
grep -E "FAILED|ERROR" "$OUT/test-triton.log" | head -20
timeout -s KILL 60 python3 -m bench.model_tasnet --backends triton --modes eager --budget 0.5 \
  --ab-env NORMK_TRITON_DIRECT_LAUNCH=0,1 --ab-rounds 3 --out "$OUT" > "$OUT/tasnet-ab.log" 2>&1
echo "tasnet A/B rc=$?"; tail -6 "$OUT/tasnet-ab.log"
timeout -s KILL 60 python3 -m bench.profile_overhead triton > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; cat "$OUT/overhead.log"
