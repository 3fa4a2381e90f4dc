#!/usr/bin/env bash
# Session 25: after the Triton-version guard of CLN_PDL (_triton_has_pdl), on the GPU: the guard
# says yes there, and the Triton cLN tests (with the PDL test) pass.
#   OUT=out SKIP_CUDA_BUILD=1 bash bench/gpu_s25d.sh
set -uo pipefail
source bench/gpu_env.sh
python3 -c "
import torch
from backends.triton import kernels as K
x = torch.empty(1, device='cuda')
print('triton has PDL:', K._triton_has_pdl(), '| PDL on for cuda:0:', K._pdl(x))" 2>&1 | tail -2
gpu_test_triton_cln
cp "$OUT/test-triton.log" "$OUT/test-triton-s25d.log"
