#!/usr/bin/env bash
# Session 33: the forward's register caps below its defaults (packed 16-bit 144 / 128 / 112,
# fp32 96 / 80; bench/tune.py), forward only, two rounds of bench.tune per dtype, with every
# compiled kernel's registers and spills as the GPU's ptxas made them.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s33b.sh
set -uo pipefail
source bench/gpu_env.sh
TUNE_ARGS=--regs TUNE_DTYPE=bf16 T_TUNE=150 gpu_tune_rounds fwd16caps33 \
  "default,fwd16 nreg144,fwd16 nreg128,fwd16 nreg112" fwd
grep -h "registers" "$OUT/tune-fwd16caps33-2.log" | sort -u
TUNE_ARGS=--regs TUNE_DTYPE=fp32 T_TUNE=150 gpu_tune_rounds fwd32caps33 \
  "default,fwd32 nreg96,fwd32 nreg80" fwd
grep -h "registers" "$OUT/tune-fwd32caps33-2.log" | sort -u
