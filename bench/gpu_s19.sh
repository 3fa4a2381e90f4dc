#!/usr/bin/env bash
# Session 19, one call on the 1-GPU machine, Triton only:
# 1. The packed 16-bit forward with longer tile rows (CLN_FWD_WIDE_ROW_BYTES_16BIT), two rounds
#    of bench.tune against the default in separate processes.
# 2. NOTES 21.4's full-run slowdown of Triton's fp32 (2, 128, 64000) fwd+bwd: the case alone in
#    a fresh process, then again right after 20 s of copies in another process (a hot GPU),
#    with the clocks read after each.
#   OUT=out bash bench/gpu_s19.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
for round in 1 2; do
  timeout -s KILL ${T_TUNE:-200} python3 -m bench.tune --backend triton --ops cln --parts shapes \
    --dtype bf16 --variants "default,fwd16 rows128,fwd16 rows256,fwd16 rows128 tile32k" \
    > "$OUT/tune-fwd16-rows-$round.log" 2>&1
  echo "tune round $round rc=$?"; grep -v '^$' "$OUT/tune-fwd16-rows-$round.log"
done
clocks() {
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader \
    | sed "s/^/$1: /" | tee -a "$OUT/clocks.txt"
}
case_alone() {  # $1 tag
  timeout -s KILL 120 python3 -m bench --op cln --backend triton --mode fwd,fwd_bwd --dtype fp32 \
    --shapes 2x128x64000 --cuda-graph all --budget 0.15 --out "$OUT" --tag "$1" \
    > "$OUT/bench-$1.log" 2>&1
  echo "$1 rc=$?"; grep -E "^\| 2x128x64000 \| fwd" "$OUT/nvidia-h200-$1.md"; clocks "$1"
}
clocks start
case_alone alone-cold
timeout -s KILL 60 python3 -c "
import time, torch
a = torch.randn(2**28, device='cuda'); b = torch.empty_like(a)
t = time.time(); n = 0
while time.time() - t < 20:
    b.copy_(a); n += 1
torch.cuda.synchronize(); print(f'heat: {n} copies of 1 GiB in 20 s')
" 2>&1 | tee "$OUT/heat.log"
clocks heated
case_alone alone-hot
