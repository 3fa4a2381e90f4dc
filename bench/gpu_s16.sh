#!/usr/bin/env bash
# Session 16, first call: where the cLN backward's time goes (bench/ablate_cln.py --bwd: the
# backward alone, Triton ablation levels, both backends with and without dgamma / dbeta, the
# same bytes moved by torch.add, the kernels of one Triton backward call), then Triton
# backward tile variants (bench.tune).
#   OUT=out bash bench/gpu_s16.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_ABL:-240} python3 -m bench.ablate_cln --bwd > "$OUT/ablate-bwd.log" 2>&1
echo "ablate rc=$?"; cat "$OUT/ablate-bwd.log"
timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend triton --ops cln --parts shapes \
  --variants "default,bwd tile4096,bwd tile16384,bwd ept32" > "$OUT/tune-bwd-tile.log" 2>&1
echo "tune rc=$?"; cat "$OUT/tune-bwd-tile.log"
