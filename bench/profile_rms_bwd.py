"""One RMSNorm forward + backward per backend inside an NVTX range "prof", for a profiler.

    ncu --nvtx --nvtx-include "prof/" --section SpeedOfLight ... \\
        python3 -m bench.profile_rms_bwd --backend cuda_ext,triton --shape 16384x8192 --dtype bf16

A warm-up step runs first (builds, compiles, autotunes, allocator), outside the range; every
kernel of the profiled step (backward, column sums, casts) then shows up, in order.  Inputs are
fresh random draws; the gradients are checked against the float64 reference of the benchmark,
so a profile is never taken of a wrong kernel.  GPU only.
"""

from __future__ import annotations

import argparse
import random
import sys

import torch

from bench.impls import backend_fn
from bench.runner import make_group
from common.testing import assert_close


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cuda_ext,triton")
    ap.add_argument("--shape", default="16384x8192")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    args = ap.parse_args(argv)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    shape = tuple(int(s) for s in args.shape.split("x"))
    dev = torch.device("cuda")
    for backend in args.backend.split(","):
        g = make_group("rmsnorm", shape, dtype, dev, random.randrange(2**31), 1, 1)
        fn = backend_fn("rmsnorm", backend)
        leaves = [t.clone().requires_grad_(True) for t in (g.xs[0], *g.params)]

        def step(fn=fn, leaves=leaves, dy=g.dys[0]):
            return torch.autograd.grad(fn(leaves[0], tuple(leaves[1:])), leaves, dy)

        for name, got, want, tol in zip(g.grad_names, step(), g.ref_grads, g.tol_grads):
            assert_close(name, got, want, tol)
        torch.cuda.synchronize()
        # The backward on this thread (not autograd's device thread), so that its kernels
        # are inside this thread's NVTX range.
        with torch.autograd.set_multithreading_enabled(False):
            torch.cuda.nvtx.range_push("prof")
            step()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        print(f"{backend}: profiled one forward + backward at {shape} {args.dtype}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
