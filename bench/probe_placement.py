"""Does where x, dy, dx and y lie in memory change a cLN kernel's time?  (NOTES 22.)

In one benchmark process, groups after the first get their tensors from fresh ``cudaMalloc``
segments (the runner empties the caching allocator between groups), the first group from the
copy-bandwidth measurement's cached 2 GiB segments.  Triton's fp32 (2, 128, 64000) fwd+bwd took
126-127 us as a first group and 134-137 us as a later one.  This times the kernels themselves
(``cln_forward`` / ``cln_backward`` of a backend's kernels module, CUDA-graph replay, random
inputs) with the four tensors placed by hand:

- ``segments``: each tensor its own fresh allocation (the allocator emptied before);
- ``packed``: one buffer, each tensor right after the previous one;
- ``2MiB``: one buffer, each tensor at the next 2 MiB boundary;
- ``2MiB+odd``: one buffer, each tensor 1.5 MiB past the next 2 MiB boundary after the previous
  one (the low 21 address bits differ from tensor to tensor).

    python3 -m bench.probe_placement --backends triton,cuda_ext --shapes 2x128x64000
"""

from __future__ import annotations

import argparse
import math
from types import ModuleType

import torch

from bench.runner import DTYPE_NAMES
from bench.shapes import Shape, parse_shape
from bench.timing import current_cuda_device, side_stream, time_steps
from common.registry import get_backend

MIB = 2**20
LAYOUTS = ("segments", "packed", "2MiB", "2MiB+odd")
NAMES = ("x", "dy", "dx", "y")


def place(layout: str, shape: Shape, dtype: torch.dtype, dev: torch.device) -> dict:
    """The four big tensors of one layout, filled: x and dy random, dx and y NaN."""
    n = math.prod(shape)
    size = n * dtype.itemsize
    if layout == "segments":
        torch.cuda.empty_cache()
        ts = [torch.empty(shape, dtype=dtype, device=dev) for _ in NAMES]
    else:
        step = {
            "packed": size,
            "2MiB": -(-size // (2 * MIB)) * 2 * MIB,
            "2MiB+odd": -(-size // (2 * MIB)) * 2 * MIB + 3 * MIB // 2,
        }[layout]
        base = torch.empty(step * len(NAMES) + size, dtype=torch.uint8, device=dev)
        ts = [base[k * step : k * step + size].view(dtype).view(shape) for k in range(len(NAMES))]
    gen = torch.Generator(device=dev).manual_seed(7)
    for t, name in zip(ts, NAMES, strict=True):
        if name in ("x", "dy"):
            t.copy_(torch.randn(shape, generator=gen, device=dev))
        else:
            t.fill_(float("nan"))
    return dict(zip(NAMES, ts, strict=True))


def time_layout(
    K: ModuleType, layout: str, shape: Shape, dtype: torch.dtype, dev: torch.device, budget: float
) -> str:
    """One line: the forward's and the backward's median time in ``layout``."""
    B, C, T = shape
    gen = torch.Generator(device=dev).manual_seed(11)
    g = 1.0 + 0.1 * torch.randn(C, generator=gen, device=dev)
    b = 0.1 * torch.randn(C, generator=gen, device=dev)
    t = place(layout, shape, dtype, dev)
    mean = torch.empty((B, T), device=dev)
    rstd = torch.empty((B, T), device=dev)
    m2 = torch.empty((B,), device=dev)
    dg = torch.empty((C,), device=dev)
    db = torch.empty((C,), device=dev)

    def fwd() -> None:
        K.cln_forward(t["x"], g, b, 1e-8, None, t["y"], mean, rstd, m2)

    def bwd() -> None:
        K.cln_backward(t["dy"], t["x"], g, mean, rstd, None, t["dx"], dg, db)

    with side_stream(dev):
        fwd()
        bwd()
        torch.cuda.synchronize(dev)
        bad = [k for k in ("y", "dx") if not torch.isfinite(t[k]).all()]
        tf = time_steps([fwd], dev, budget, cuda_graph=True)
        tb = time_steps([bwd], dev, budget, cuda_graph=True)
    addr = " ".join(f"{k}%2M={t[k].data_ptr() % (2 * MIB) // 1024}K" for k in NAMES)
    bad_s = f" NON-FINITE {bad}" if bad else ""
    return f"fwd {tf.median_us:7.1f} us  bwd {tb.median_us:7.1f} us  [{addr}]{bad_s}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="triton")
    p.add_argument("--shapes", default="2x128x64000")
    p.add_argument("--dtypes", default="fp32", help="comma list of fp32, bf16")
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--budget", type=float, default=0.15)
    p.add_argument("--regs", action="store_true", help="then the Triton kernels' registers")
    args = p.parse_args(argv)
    dev = current_cuda_device("probe_placement")
    if dev is None:
        return 2
    dnames = args.dtypes.split(",")
    if not set(dnames) <= {"fp32", "bf16"}:
        p.error(f"--dtypes: fp32 and bf16 only, not {args.dtypes!r}")
    for backend in args.backends.split(","):
        K = get_backend(backend).kernels()
        for dname in dnames:
            for shape in (parse_shape(s) for s in args.shapes.split(",")):
                for layout in args.layouts.split(","):
                    line = time_layout(K, layout, shape, DTYPE_NAMES[dname], dev, args.budget)
                    print(f"{backend:8s} {dname} {shape} {layout:9s} {line}", flush=True)
        if args.regs and backend == "triton":
            for line in compiled_regs(K):
                print(line)
    return 0


def compiled_regs(K: ModuleType) -> list[str]:
    """Registers and spill bytes of every kernel the module's Triton functions compiled, with the
    ptxas that Triton used (``TRITON_PTXAS_PATH`` if set, e.g. by torch.compile, else its own)."""
    import triton
    from triton.runtime.jit import JITFunction

    tool = triton.knobs.nvidia.ptxas
    out = [f"ptxas: {tool.path} (release {tool.version})"]
    for name, fn in sorted(vars(K).items()):
        if not isinstance(fn, JITFunction):
            continue
        for cache, *_ in fn.device_caches.values():
            for ck in cache.values():
                c = ck.metadata
                regs, spills = getattr(ck, "n_regs", "?"), getattr(ck, "n_spills", "?")
                out.append(
                    f"  {name} {str(getattr(c, 'hash', ''))[:8]} warps={c.num_warps} "
                    f"maxnreg={getattr(c, 'maxnreg', None)}: {regs} registers, {spills} B spilled"
                )
    return out


if __name__ == "__main__":
    raise SystemExit(main())
