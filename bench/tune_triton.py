"""Sweep the Triton backend's launch knobs at the issue's target shapes (GPU only).

    python3 -m bench.tune_triton [--quick]

Each variant sets module constants of ``backends.triton.kernels`` (they are
part of every config cache key), checks the result against the float64
reference, then times it with the benchmark's own timer (``bench.timing``,
CUDA-graph replay: kernel time; see bench/results/NOTES.md section 1 for why).
The copy bandwidth is measured in the same run, by the benchmark's
``copy_bandwidth``; figures are fractions of it.  The sweep has so far been
run host bound (first session) and in --quick form; the committed defaults
come from offline ptxas register and spill reports plus those runs, not from
a full graph-timed sweep.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import torch

import common
from backends.triton import kernels as K
from bench.timing import copy_bandwidth, side_stream, time_steps
from common.reference import cln_reference, rmsnorm_reference
from common.testing import assert_close, tolerance


@contextlib.contextmanager
def knobs(**kw):
    old = {k: getattr(K, k) for k in kw}
    for k, v in kw.items():
        setattr(K, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(K, k, v)


def t_ms(fn, graph: bool = True) -> float:
    """Median GPU time of one call (CUDA-graph replay: no host launch overhead)."""
    dev = torch.device("cuda")
    ctx = side_stream(dev) if graph else contextlib.nullcontext()
    with ctx:
        fn()
        return time_steps([fn], dev, budget_s=0.15, cuda_graph=graph).median_us / 1e3


def cln_case(shape, dtype, mode):
    B, C, T = shape
    x = (torch.randn(shape, device="cuda") + 0.5).to(dtype)
    g = torch.rand(C, device="cuda") + 0.5
    b = torch.randn(C, device="cuda")
    dy = torch.randn(shape, device="cuda").to(dtype)
    if mode == "fwd":
        y = common.cln(x, g, b, backend="triton")
        assert_close("fwd", y, cln_reference(x, g, b), tolerance(dtype, C * T, 0.5))
        with torch.no_grad():
            return t_ms(lambda: common.cln(x, g, b, backend="triton")), 2
    xr = x.clone().requires_grad_(True)
    gr = g.clone().requires_grad_(True)
    br = b.clone().requires_grad_(True)

    def step():
        y = common.cln(xr, gr, br, backend="triton")
        torch.autograd.grad(y, [xr, gr, br], dy)

    step()
    return t_ms(step), 5


def rms_case(shape, dtype, mode):
    M, N = shape
    x = torch.randn(shape, device="cuda").to(dtype)
    w = (torch.rand(N, device="cuda") + 0.5).to(dtype)
    dy = torch.randn(shape, device="cuda").to(dtype)
    if mode == "fwd":
        y = common.rmsnorm(x, w, backend="triton")
        assert_close("fwd", y, rmsnorm_reference(x, w), tolerance(dtype, N))
        with torch.no_grad():
            return t_ms(lambda: common.rmsnorm(x, w, backend="triton")), 2
    xr = x.clone().requires_grad_(True)
    wr = w.clone().requires_grad_(True)

    def step():
        y = common.rmsnorm(xr, wr, backend="triton")
        torch.autograd.grad(y, [xr, wr], dy)

    step()
    return t_ms(step), 5


CLN_SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]
RMS_SHAPES = [(32768, 4096), (16384, 8192), (2048, 4096)]

CLN_FWD_VARIANTS = {
    "default": {},
    "nreg=None": {"CLN_FWD_MAXNREG": None},
    "ept32": {"CLN_FWD_EPT": 32},
    "tile4096": {"CLN_FWD_TILE": 4096},
    "lookback1": {"CLN_FWD_LOOKBACK": 1},
    "tile16384,ept128,nreg=None": {
        "CLN_FWD_TILE": 16384, "CLN_FWD_EPT": 128, "CLN_FWD_MAXNREG": None,
    },
}
CLN_BWD_VARIANTS = {
    "default": {},
    "bwd nreg=None": {"CLN_BWD_MAXNREG": None},
    "bwd tile4096": {"CLN_BWD_TILE": 4096},
    "bwd ept16,nreg=None": {"CLN_BWD_EPT": 16, "CLN_BWD_MAXNREG": None},
}
RMS_BWD_VARIANTS = {
    "default": {},
    "stages1": {"RMS_BWD_STAGES": 1},
    "stages3": {"RMS_BWD_STAGES": 3},
    "resident32": {"RMS_BWD_RESIDENT_WARPS": 32},
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s")
    rows = []

    def run(op, shape, dtype, mode, name, kw):
        fn = cln_case if op == "cln" else rms_case
        try:
            with knobs(**kw):
                ms, factor = fn(shape, dtype, mode)
        except Exception as exc:  # report and go on: a sweep should not die on one variant
            print(f"{op} {shape} {dtype} {mode} {name}: FAILED {type(exc).__name__}: {exc}")
            return
        nbytes = factor * torch.Size(shape).numel() * torch.tensor([], dtype=dtype).element_size()
        gbs = nbytes / (ms * 1e-3)
        line = (f"{op:7s} {str(shape):18s} {str(dtype)[6:]:9s} {mode:7s} {name:28s} "
                f"{ms * 1e3:9.1f} us {gbs / 1e9:7.0f} GB/s {gbs / bw:5.2f}")
        print(line, flush=True)
        rows.append(line)

    dtypes = [torch.float32, torch.bfloat16]
    cln_fwd_vars = {"default": {}} if args.quick else CLN_FWD_VARIANTS
    cln_bwd_vars = {"default": {}} if args.quick else CLN_BWD_VARIANTS
    for dtype in dtypes:
        for shape in CLN_SHAPES:
            for name, kw in cln_fwd_vars.items():
                run("cln", shape, dtype, "fwd", name, kw)
            for name, kw in cln_bwd_vars.items():
                run("cln", shape, dtype, "fwd_bwd", name, kw)
    run("cln", (80, 64, 301), torch.float32, "fwd", "seed default", {})
    run("cln", (80, 64, 301), torch.float32, "fwd", "seed min_tiles1", {"CLN_MIN_TILES_PER_SM": 1})
    # A long single sequence: thousands of tiles chained by the look-back (hang check).
    run("cln", (1, 64, 2_000_000), torch.float32, "fwd", "long-seq", {})
    run("cln", (1, 64, 2_000_000), torch.float32, "fwd_bwd", "long-seq", {})
    rms_vars = {"default": {}} if args.quick else RMS_BWD_VARIANTS
    for dtype in dtypes:
        for shape in RMS_SHAPES:
            run("rmsnorm", shape, dtype, "fwd", "default", {})
            for name, kw in rms_vars.items():
                run("rmsnorm", shape, dtype, "fwd_bwd", name, kw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
