#!/usr/bin/env bash
# Session 16, second call: the Triton backward's dgamma / dbeta partials in one buffer summed
# by its own fixed-order column-sum kernel (kernels.colsum) instead of two torch.sum calls.
# The backward alone again (ablate_cln --bwd, both backends, kernel lists), the Triton cLN
# fwd / fwd+bwd defaults and RMSNorm (whose dw partials take the same colsum), then the GPU
# tests of the Triton backend and the shared harness's new one-parameter backward.
#   OUT=out bash bench/gpu_s16b.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_ABL:-200} python3 -m bench.ablate_cln --bwd > "$OUT/ablate-bwd.log" 2>&1
echo "ablate rc=$?"; grep -v Warn "$OUT/ablate-bwd.log"
timeout -s KILL ${T_TUNE:-150} python3 -m bench.tune --backend triton --ops cln \
  --parts shapes --variants "default,bwd tile16384" > "$OUT/tune-colsum.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-colsum.log"
timeout -s KILL ${T_TUNE:-100} python3 -m bench.tune --backend triton --ops rmsnorm --quick \
  > "$OUT/tune-colsum-rms.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-colsum-rms.log"
timeout -s KILL ${T_TESTS:-200} python3 -m pytest -q -p no:cacheprovider \
  tests/test_cln.py tests/test_rmsnorm.py tests/test_triton_paths.py -k "triton or colsum or one_param" \
  > "$OUT/test-triton.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test-triton.log"
