"""One RMSNorm forward + backward per backend inside an NVTX range "prof", for a profiler.

    ncu --nvtx --nvtx-include "prof/" --section SpeedOfLight ... \\
        python3 -m bench.profile_rms_bwd --backend cuda_ext,triton --shape 16384x8192 --dtype bf16

A warm-up step runs first (builds, compiles, autotunes, allocator), outside the range; every
kernel of the profiled step (backward, column sums, casts) then shows up, in order.  Inputs are
fresh random draws; the gradients are checked against the float64 reference of the benchmark,
so a profile is never taken of a wrong kernel.  GPU only.

``--kernels N`` instead times N steps with torch.profiler (CUPTI) and prints the mean device
time of every kernel of a step, per backend: where a forward + backward spends its time without
ncu's cache flushes and serialization.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
from collections.abc import Callable
from typing import Any

import torch

from bench.impls import backend_fn
from bench.runner import make_group
from bench.tune import knobs
from common.testing import assert_close


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cuda_ext,triton")
    ap.add_argument("--shape", default="16384x8192")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--kernels", type=int, default=0, help="steps to time with torch.profiler")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KNOB=INT",
        help="a launch knob of the backend modules (e.g. RMS_BWD_STAGES=2), repeatable",
    )
    args = ap.parse_args(argv)
    knob_values = {k: int(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    shape = tuple(int(s) for s in args.shape.split("x"))
    dev = torch.device("cuda")
    for backend in args.backend.split(","):
        g = make_group("rmsnorm", shape, dtype, dev, random.randrange(2**31), 1, 1)
        fn = backend_fn("rmsnorm", backend)
        mod = importlib.import_module(f"backends.{backend}.kernels")
        with knobs(mod, {k: v for k, v in knob_values.items() if hasattr(mod, k)}):
            profile_one(backend, fn, g, args, shape)
    return 0


def profile_one(
    backend: str, fn: Callable, g: Any, args: argparse.Namespace, shape: tuple[int, ...]
) -> None:
    """Check one backend's gradients, then profile one step (NVTX range) or time its kernels."""
    leaves = [t.clone().requires_grad_(True) for t in (g.xs[0], *g.params)]

    def step() -> object:
        return torch.autograd.grad(fn(leaves[0], tuple(leaves[1:])), leaves, g.dys[0])

    for name, got, want, tol in zip(g.grad_names, step(), g.ref_grads, g.tol_grads):
        assert_close(name, got, want, tol)
    torch.cuda.synchronize()
    if args.kernels:
        kernel_table(backend, step, args.kernels)
        return
    # The backward on this thread (not autograd's device thread), so that its kernels
    # are inside this thread's NVTX range.
    with torch.autograd.set_multithreading_enabled(False):
        torch.cuda.nvtx.range_push("prof")
        step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    print(f"{backend}: profiled one forward + backward at {shape} {args.dtype}", flush=True)


def kernel_table(backend: str, step: Callable[[], object], steps: int) -> None:
    """Mean device time per step of each kernel of `step` (torch.profiler, CUDA activity)."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        dev_us = getattr(ev, "device_time_total", 0.0) or getattr(ev, "cuda_time_total", 0.0)
        if ev.device_type == torch.autograd.DeviceType.CUDA and dev_us > 0:
            rows.append((dev_us / steps, ev.count / steps, ev.key))
    rows.sort(reverse=True)
    print(f"{backend}: device time per step ({steps} steps)")
    for us, count, key in rows:
        print(f"  {us:9.2f} us  x{count:4.1f}  {key[:110]}")
    print(f"  {sum(r[0] for r in rows):9.2f} us  total", flush=True)


if __name__ == "__main__":
    sys.exit(main())
