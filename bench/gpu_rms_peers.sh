#!/usr/bin/env bash
# GPU call: RMSNorm of both compiled backends against F.rms_norm and Liger-Kernel at the
# issue shapes, fwd and fwd+bwd, bf16 and fp32, in one run (python -m bench, CUDA graphs).
#   bash bench/gpu_rms_peers.sh
set -uo pipefail
source bench/gpu_env.sh
timeout -s KILL ${T_BENCH:-240} python3 -m bench --op rmsnorm --backend triton,cuda_ext \
  --peers F.rms_norm,liger --mode fwd,fwd_bwd --dtype bf16,fp32 \
  --shapes 2048x4096,32768x4096,16384x8192 --cuda-graph all --budget 0.15 \
  --out "$OUT" --tag ${TAG:-rms-peers} > "$OUT/bench-rms.log" 2>&1
echo "bench rc=$?"; tail -40 "$OUT/bench-rms.log"
