"""Session 52 probe (GPU): each kernel's time in one cLN forward + backward of a backend.

    source bench/gpu_env.sh; python3 -m bench.probe_kernels52 [--backend cuda_ext]
        [--shapes 16x512x4000,...] [--dtype fp32] [--iters 20] [--once]

Without ``--once``: ``iters`` forward + backward calls through the public API (gamma and beta
learnable, as the benchmark's fwd_bwd mode), under ``torch.profiler``; prints each kernel's
mean device time per call (us) and the number of launches, per shape.  With ``--once``: three
calls of the first shape and nothing else, for ``ncu --launch-skip`` (the first call's kernels
skipped: build and first-launch effects).

Why: NOTES 52.3 found cuda_ext's fwd+bwd 3-9 us slower with a tile-decode branch in every
kernel, the forward alone level; which of the three kernels (the forward keeping statistics,
the backward, the column sums) carries it was not measured.
"""

from __future__ import annotations

import argparse
import collections

import torch

import common

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def _inputs(shape: tuple[int, int, int], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    g = torch.Generator(device="cuda").manual_seed(52)
    x = (torch.randn(shape, device="cuda", generator=g) + 0.5).to(dtype).requires_grad_(True)
    gam = (torch.rand(shape[1], device="cuda", generator=g) + 0.5).to(dtype).requires_grad_(True)
    bet = torch.randn(shape[1], device="cuda", generator=g).to(dtype).requires_grad_(True)
    dy = torch.randn(shape, device="cuda", generator=g).to(dtype)
    return x, gam, bet, dy


def _steps(backend: str, inputs: tuple[torch.Tensor, ...], n: int) -> None:
    """``n`` forward + backward calls, then a synchronize."""
    x, gam, bet, dy = inputs
    for _ in range(n):
        y = common.cln(x, gam, bet, backend=backend)
        torch.autograd.backward(y, dy)
        x.grad = gam.grad = bet.grad = None
    torch.cuda.synchronize()


def kernel_times(backend: str, shape: tuple[int, int, int], dtype: torch.dtype, iters: int) -> None:
    inputs = _inputs(shape, dtype)
    _steps(backend, inputs, 3)
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        _steps(backend, inputs, iters)
    tot: dict[str, float] = collections.defaultdict(float)
    cnt: dict[str, int] = collections.defaultdict(int)
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = e.name if len(e.name) <= 90 else e.name[:87] + "..."
        tot[name] += e.time_range.elapsed_us()
        cnt[name] += 1
    print(f"== {backend} {shape} {str(dtype).removeprefix('torch.')} ({iters} calls)", flush=True)
    for name in sorted(tot, key=lambda n: -tot[n]):
        print(f"  {tot[name] / iters:9.2f} us/call  x{cnt[name] / iters:.0f}  {name}", flush=True)
    print(f"  {sum(tot.values()) / iters:9.2f} us/call in all", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda_ext")
    ap.add_argument("--shapes", default="16x512x4000,4x256x16000,2x128x64000")
    ap.add_argument("--dtype", default="fp32", choices=list(DTYPES))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--once", action="store_true", help="three calls of the first shape (ncu)")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    if args.once:
        _steps(args.backend, _inputs(shapes[0], DTYPES[args.dtype]), 3)  # type: ignore[arg-type]
        return 0
    for shape in shapes:
        kernel_times(args.backend, shape, DTYPES[args.dtype], args.iters)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
