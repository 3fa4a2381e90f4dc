"""Sweep a backend's launch knobs at the issues' target shapes (GPU only).

    python3 -m bench.tune --backend triton,cuda_ext [--ops cln,rmsnorm] [--quick]

Each variant sets module constants of the backend's kernel module (Triton:
``backends.triton.kernels``; CUDA: ``backends.cuda_ext.kernels``; both read
them at call time), checks the result against the float64 reference, then
times it with the benchmark's own timer (``bench.timing``, CUDA-graph replay:
kernel time; see bench/results/NOTES.md section 1 for why).  The copy
bandwidth is measured in the same run by the benchmark's ``copy_bandwidth``;
figures are fractions of it.  A variant whose knob the module lacks is
reported and skipped, so the sweep never times a default by mistake.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator
from types import ModuleType

import torch

import common
from bench.timing import copy_bandwidth, side_stream, time_steps
from common.reference import cln_reference, rmsnorm_reference
from common.testing import assert_close, tolerance

MODULES = {"triton": "backends.triton.kernels", "cuda_ext": "backends.cuda_ext.kernels"}

CLN_SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]
RMS_SHAPES = [(32768, 4096), (16384, 8192), (2048, 4096)]
SEED = (80, 64, 301)

# cLN launch variants per backend (module constants of the kernel module).
CLN_VARIANTS: dict[str, dict[str, dict[str, object]]] = {
    "triton": {
        "default": {},
        "run4": {"CLN_TICKET_RUN": 4},
        "run4 group256": {"CLN_TICKET_RUN": 4, "CLN_GROUP": 256, "CLN_CHUNK": 256},
        "fwd16 ept64 nreg128": {"CLN_FWD_EPT_16BIT": 64, "CLN_FWD_MAXNREG_16BIT": 128},
        "bwd ept32 nreg128": {"CLN_BWD_EPT": 32, "CLN_BWD_MAXNREG": 128},
        "group256": {"CLN_GROUP": 256, "CLN_CHUNK": 256},
    },
    "cuda_ext": {
        "default": {},
        "G128": {"CLN_GROUP_TILES": 128},
        "G512": {"CLN_GROUP_TILES": 512},
        "G1024": {"CLN_GROUP_TILES": 1024},
    },
}
SEED_VARIANTS: dict[str, dict[str, dict[str, object]]] = {
    "triton": {"default": {}, "min_tiles1": {"CLN_MIN_TILES_PER_SM": 1}},
    "cuda_ext": {"default": {}},
}
RMS_BWD_VARIANTS: dict[str, dict[str, dict[str, object]]] = {
    "triton": {
        "default": {},
        "stages1": {"RMS_BWD_STAGES": 1, "RMS_BWD_STAGES_16BIT": 1},
        "stages2": {"RMS_BWD_STAGES": 2, "RMS_BWD_STAGES_16BIT": 2},
        "stages3": {"RMS_BWD_STAGES": 3, "RMS_BWD_STAGES_16BIT": 3},
        "resident32": {"RMS_BWD_RESIDENT_WARPS": 32},
    },
    "cuda_ext": {"default": {}},
}


@contextlib.contextmanager
def knobs(mod: ModuleType, kw: dict[str, object]) -> Iterator[None]:
    missing = [k for k in kw if not hasattr(mod, k)]
    if missing:
        raise AttributeError(f"{mod.__name__} has no knob {', '.join(missing)}")
    old = {k: getattr(mod, k) for k in kw}
    for k, v in kw.items():
        setattr(mod, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(mod, k, v)


def t_ms(fn: Callable[[], object]) -> float:
    """Median GPU time of one call (CUDA-graph replay: no host launch overhead)."""
    dev = torch.device("cuda")
    with side_stream(dev):
        fn()
        return time_steps([fn], dev, budget_s=0.15, cuda_graph=True).median_us / 1e3


def cln_case(backend: str, shape, dtype, mode) -> tuple[float, int]:
    B, C, T = shape
    x = (torch.randn(shape, device="cuda") + 0.5).to(dtype)
    g = torch.rand(C, device="cuda") + 0.5
    b = torch.randn(C, device="cuda")
    dy = torch.randn(shape, device="cuda").to(dtype)
    if mode == "fwd":
        y = common.cln(x, g, b, backend=backend)
        assert_close("fwd", y, cln_reference(x, g, b), tolerance(dtype, C * T, 0.5))
        with torch.no_grad():
            return t_ms(lambda: common.cln(x, g, b, backend=backend)), 2
    xr = x.clone().requires_grad_(True)
    gr = g.clone().requires_grad_(True)
    br = b.clone().requires_grad_(True)

    def step():
        y = common.cln(xr, gr, br, backend=backend)
        return torch.autograd.grad(y, [xr, gr, br], dy)

    # Gradients checked against float64 autograd through the eager backend.
    x64, g64, b64 = (t.detach().double().requires_grad_(True) for t in (x, g, b))
    refs = torch.autograd.grad(common.cln(x64, g64, b64, backend="eager"), [x64, g64, b64],
                               dy.double())
    for name, got, want in zip(("dx", "dgamma", "dbeta"), step(), refs):
        assert_close(name, got, want, 2 * tolerance(dtype, C * T, 0.5))
    return t_ms(step), 5


def rms_case(backend: str, shape, dtype, mode) -> tuple[float, int]:
    M, N = shape
    x = torch.randn(shape, device="cuda").to(dtype)
    w = (torch.rand(N, device="cuda") + 0.5).to(dtype)
    dy = torch.randn(shape, device="cuda").to(dtype)
    if mode == "fwd":
        y = common.rmsnorm(x, w, backend=backend)
        assert_close("fwd", y, rmsnorm_reference(x, w), tolerance(dtype, N))
        with torch.no_grad():
            return t_ms(lambda: common.rmsnorm(x, w, backend=backend)), 2
    xr = x.clone().requires_grad_(True)
    wr = w.clone().requires_grad_(True)

    def step():
        y = common.rmsnorm(xr, wr, backend=backend)
        return torch.autograd.grad(y, [xr, wr], dy)

    # Gradients checked against float64 autograd through the eager backend.
    x64, w64 = (t.detach().double().requires_grad_(True) for t in (x, w))
    refs = torch.autograd.grad(common.rmsnorm(x64, w64, backend="eager"), [x64, w64], dy.double())
    for name, got, want in zip(("dx", "dw"), step(), refs):
        assert_close(name, got, want, 2 * tolerance(dtype, M if name == "dw" else N))
    return t_ms(step), 5


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="triton", help="comma-separated: triton,cuda_ext")
    ap.add_argument("--ops", default="cln,rmsnorm")
    ap.add_argument("--dtype", default="fp32,bf16")
    ap.add_argument("--quick", action="store_true", help="defaults only")
    args = ap.parse_args()
    dtypes = [{"fp32": torch.float32, "bf16": torch.bfloat16}[d] for d in args.dtype.split(",")]
    ops = args.ops.split(",")
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s  (torch {torch.__version__})", flush=True)

    def run(backend, op, shape, dtype, mode, name, kw):
        fn = cln_case if op == "cln" else rms_case
        try:
            with knobs(importlib.import_module(MODULES[backend]), kw):
                ms, factor = fn(backend, shape, dtype, mode)
        except Exception as exc:  # report and go on: a sweep should not die on one variant
            print(f"{backend} {op} {shape} {dtype} {mode} {name}: FAILED "
                  f"{type(exc).__name__}: {str(exc)[:300]}", flush=True)
            return
        nbytes = factor * torch.Size(shape).numel() * torch.tensor([], dtype=dtype).element_size()
        gbs = nbytes / (ms * 1e-3)
        print(f"{backend:8s} {op:7s} {str(shape):18s} {str(dtype)[6:]:9s} {mode:7s} {name:18s} "
              f"{ms * 1e3:9.1f} us {gbs / 1e9:7.0f} GB/s {gbs / bw:5.2f}", flush=True)

    for backend in args.backend.split(","):
        if "cln" in ops:
            variants = {"default": {}} if args.quick else CLN_VARIANTS[backend]
            for dtype in dtypes:
                for shape in CLN_SHAPES:
                    for mode in ("fwd", "fwd_bwd"):
                        for name, kw in variants.items():
                            run(backend, "cln", shape, dtype, mode, name, kw)
            seed_vars = {"default": {}} if args.quick else SEED_VARIANTS[backend]
            for name, kw in seed_vars.items():
                run(backend, "cln", SEED, torch.float32, "fwd", "seed " + name, kw)
            # A long single sequence: thousands of tiles (hang and long-prefix check).
            for mode in ("fwd", "fwd_bwd"):
                run(backend, "cln", (1, 64, 2_000_000), torch.float32, mode, "long-seq", {})
        if "rmsnorm" in ops:
            rms_vars = {"default": {}} if args.quick else RMS_BWD_VARIANTS[backend]
            for dtype in dtypes:
                for shape in RMS_SHAPES:
                    run(backend, "rmsnorm", shape, dtype, "fwd", "default", {})
                    for name, kw in rms_vars.items():
                        run(backend, "rmsnorm", shape, dtype, "fwd_bwd", name, kw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
