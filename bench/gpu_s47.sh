#!/usr/bin/env bash
# Session 47: the Triton host path (direct launches, cached launch plans, no autograd node
# without grad).  The Triton tests that exercise the launches (the launcher's own, cLN with
# every knob path, the negative controls, RMSNorm), then the host time of each layer with
# launches through JITFunction.run and direct (python3 -m bench.profile_overhead), then the
# Conv-TasNet step eagerly, launches through JITFunction.run and direct.
#   OUT=out bash bench/gpu_s47.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
t0=$(date +%s)
timeout -s KILL 240 python3 -m pytest -q $(gpu_xdist_args) --backend triton \
  tests/test_triton_launch.py tests/test_cln.py tests/test_rmsnorm.py tests/test_triton_paths.py \
  tests/test_negative_controls.py > "$OUT/test-triton.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/test-triton.log"
grep -E "FAILED|ERROR" "$OUT/test-triton.log" | head -20
timeout -s KILL 150 python3 -m bench.profile_overhead triton --profile > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; head -30 "$OUT/overhead.log"
for d in 0 1; do
  NORMK_TRITON_DIRECT_LAUNCH=$d timeout -s KILL 120 python3 -m bench.model_tasnet \
    --backends triton --modes eager > "$OUT/tasnet-eager-direct$d.log" 2>&1
  echo "tasnet direct=$d rc=$?"; tail -12 "$OUT/tasnet-eager-direct$d.log"
done
