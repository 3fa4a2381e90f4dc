#!/usr/bin/env bash
# Session 19: does torch.compile change the ptxas that later Triton compiles use?  Inductor sets
# TRITON_PTXAS_PATH to torch's own bin/ptxas when that exists (torch/_inductor/runtime/
# compile_tasks.py, _set_triton_ptxas_path); in the benchmark the torch.compile peer of the
# first group runs before the Triton kernels of the later groups are compiled (NOTES 21.4).
# The Triton cLN kernels timed and their registers read with each ptxas, fresh caches.
#   OUT=out bash bench/gpu_s19e.sh
set -uo pipefail
SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
{
TP=$(python3 -c "import torch, pathlib; print(pathlib.Path(torch.__file__).parent / 'bin' / 'ptxas')")
ls -la "$TP" && "$TP" --version | tail -2
python3 -c "import triton; t = triton.knobs.nvidia.ptxas; print('triton default ptxas:', t.path, t.version)"
timeout 120 python3 -c "
import os, torch
print('before torch.compile: TRITON_PTXAS_PATH =', os.environ.get('TRITON_PTXAS_PATH'))
f = torch.compile(lambda x: x * 2 + 1)
f(torch.randn(8, device='cuda'))
print('after torch.compile: TRITON_PTXAS_PATH =', os.environ.get('TRITON_PTXAS_PATH'))
"
for ptx in bundled torch; do
  echo "== ptxas: $ptx"
  if [ $ptx = torch ]; then export TRITON_PTXAS_PATH=$TP; else unset TRITON_PTXAS_PATH; fi
  TRITON_CACHE_DIR=/tmp/tc-$ptx timeout -s KILL 150 python3 -m bench.probe_placement \
    --layouts packed --shapes 2x128x64000,4x256x16000,16x512x4000 --dtypes fp32,bf16 --regs
done
unset TRITON_PTXAS_PATH
} > "$OUT/ptxas.log" 2>&1
cat "$OUT/ptxas.log"
