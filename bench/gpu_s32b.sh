#!/usr/bin/env bash
# Session 32: the backward's register caps that add a program per SM since its 2-warp tiles at
# C <= 128 (fp32 204, packed 16-bit 144 / 128; bench/tune.py), fwd+bwd, two rounds of bench.tune,
# then every compiled kernel's registers and spills as the GPU's ptxas made them.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s32b.sh
set -uo pipefail
source bench/gpu_env.sh
for r in 1 2; do
  timeout -s KILL 200 python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --modes fwd_bwd --variants "default,bwd32 nreg204,bwd nreg168,bwd16 nreg144,bwd16 nreg128" \
    --regs > "$OUT/tune-caps32-$r.log" 2>&1
  echo "round $r rc=$?"
done
head -2 "$OUT/tune-caps32-1.log"
grep -h "cln" "$OUT"/tune-caps32-*.log | sort -k3,6 -s
grep -h "registers" "$OUT/tune-caps32-2.log" | sort -u
