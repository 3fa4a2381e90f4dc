"""Where the Triton cLN forward (and, with --bwd, each backend's backward) spends its time
(GPU only; a diagnostic, not a benchmark).

    python3 -m bench.ablate_cln              # time the ablation levels
    python3 -m bench.ablate_cln --once fp32  # two forward calls, for `ncu --launch-skip 1 -c 1`
        [--shape 2x128x64000] [--level 1]    # ... at another shape / ablation level
    python3 -m bench.ablate_cln --no-runs    # the levels alone (no ticket-run variants)
    python3 -m bench.ablate_cln --bwd        # the backward alone: levels, both backends
    python3 -m bench.ablate_cln --no-runs --with "tile16k:CLN_FWD_TILE_16BIT=16384"
                                             # the levels again under other knob values

Levels (``backends.triton.kernels._DIAG_ABLATE``; outputs are wrong for > 0):
0 = the kernel; 1 = no wait for / reduction of the earlier tiles' aggregates;
2 = also no per-frame statistics; 3 = also no scan and no publication (the
tile is loaded, normalized with constants and stored: the kernel's memory
access pattern alone).  The differences place the time (H200.md: "time
variants that leave one stage out").  Same timer as the benchmark
(CUDA-graph replay), copy bandwidth measured in the same run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import sys
from collections.abc import Callable

import torch

import common
from backends.triton import kernels as K
from bench.shapes import parse_shapes
from bench.timing import copy_bandwidth
from bench.tune import knobs, missing_knobs, t_ms

SHAPES = [(16, 512, 4000), (2, 128, 64000)]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def run_once(backend: str, shape: tuple[int, int, int], dtype: torch.dtype) -> None:
    """Two cLN forwards of ``backend`` (for ``ncu --launch-skip 1 -c 1``)."""
    x = torch.randn(shape, device="cuda").to(dtype)
    for _ in range(2):
        common.cln(x, backend=backend)
    torch.cuda.synchronize()


def run_levels(
    backend: str,
    variants: dict[str, Callable[[], contextlib.AbstractContextManager[object]]],
    shapes: list[tuple[int, int, int]],
    dtypes: list[str] | None = None,
) -> None:
    """Time ``backend``'s cLN forward under each variant's context (the benchmark's timer,
    CUDA-graph replay, under ``torch.no_grad``: the forward no backward follows) at each shape
    and dtype (``dtypes``: names of DTYPES, default all); print fractions of the copy bandwidth
    measured in the same run."""
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    for name_d, dtype in DTYPES.items():
        if dtypes is not None and name_d not in dtypes:
            continue
        for shape in shapes:
            x = (torch.randn(shape, device="cuda") + 0.5).to(dtype)
            g = torch.rand(shape[1], device="cuda") + 0.5
            b = torch.randn(shape[1], device="cuda")
            nbytes = 2 * x.numel() * x.element_size()
            for name, ctx in variants.items():
                try:
                    with ctx(), torch.no_grad():
                        ms = t_ms(lambda x=x, g=g, b=b: common.cln(x, g, b, backend=backend))
                except RuntimeError as exc:  # e.g. a forced tile that does not fit: go on
                    print(f"{str(shape):18s} {name_d} {name:24s} FAILED {exc}", flush=True)
                    continue
                gbs = nbytes / (ms * 1e-3)
                print(
                    f"{str(shape):18s} {name_d} {name:24s} {ms * 1e3:8.1f} us "
                    f"{gbs / 1e9:6.0f} GB/s {gbs / bw:5.2f}",
                    flush=True,
                )


def run_backward(shapes: list[tuple[int, int, int]], profile: bool = True) -> None:
    """Time the cLN backward alone (``cln_backward`` of each backend's kernels module, on the
    statistics of its own forward; CUDA-graph replay): the Triton kernel at its ablation
    levels (``_DIAG_ABLATE_BWD``), both backends with and without dgamma / dbeta, and
    ``torch.add(x, dy, out=dx)``, which moves the same bytes (two reads, one write).  Then
    the kernels of one backward call of each backend (torch.profiler), to place the time
    outside the main kernel (the workspace memset, the partials' column sums)."""
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    for name_d, dtype in DTYPES.items():
        for shape in shapes:
            _backward_case(shape, name_d, dtype, bw, profile)


def _backward_case(
    shape: tuple[int, int, int], name_d: str, dtype: torch.dtype, bw: float, profile: bool
) -> None:
    from backends.cuda_ext import kernels as CK

    B, C, T = shape
    x = (torch.randn(shape, device="cuda") + 0.5).to(dtype)
    dy = torch.randn(shape, device="cuda").to(dtype)
    g = (torch.rand(C, device="cuda") + 0.5).to(dtype)
    dx = torch.empty_like(x)
    dg = torch.empty(C, device="cuda")
    db = torch.empty(C, device="cuda")
    nbytes = 3 * x.numel() * x.element_size()

    def line(what: str, ms: float) -> None:
        gbs = nbytes / (ms * 1e-3)
        print(
            f"{str(shape):18s} {name_d} {what:28s} {ms * 1e3:8.1f} us "
            f"{gbs / 1e9:6.0f} GB/s {gbs / bw:5.2f}",
            flush=True,
        )

    line("torch.add (same bytes)", t_ms(lambda: torch.add(x, dy, out=dx)))
    for name, mod in {"triton": K, "cuda_ext": CK}.items():
        y = torch.empty_like(x)
        mean = torch.empty((B, T), device="cuda")
        rstd = torch.empty((B, T), device="cuda")
        m2 = torch.empty(B, device="cuda")
        mod.cln_forward(x, g, None, 1e-5, None, y, mean, rstd, m2)
        levels: dict[str, dict[str, object]] = {"full": {}}
        if name == "triton":
            levels |= {
                "ablate1 no-suffix": {"_DIAG_ABLATE_BWD": 1},
                "ablate2 no-sums": {"_DIAG_ABLATE_BWD": 2},
                "ablate3 load-store": {"_DIAG_ABLATE_BWD": 3},
            }
        for lv, kw in levels.items():
            for grads in (True, False):
                with knobs(mod, kw):
                    ms = t_ms(
                        lambda mod=mod, grads=grads, mean=mean, rstd=rstd: mod.cln_backward(
                            dy,
                            x,
                            g,
                            mean,
                            rstd,
                            None,
                            dx,
                            dg if grads else None,
                            db if grads else None,
                        )
                    )
                line(f"{name} {lv}{'' if grads else ' no dg/db'}", ms)
        if profile:
            from torch.profiler import ProfilerActivity
            from torch.profiler import profile as prof

            torch.cuda.synchronize()
            with prof(activities=[ProfilerActivity.CUDA]) as p:
                for _ in range(5):
                    mod.cln_backward(dy, x, g, mean, rstd, None, dx, dg, db)
                torch.cuda.synchronize()
            for ev in p.key_averages():
                us = getattr(ev, "device_time_total", 0) / max(ev.count, 1)
                if us > 0:
                    print(f"    kernel {ev.key[:64]:64s} x{ev.count / 5:.0f} {us:8.1f} us/call")


def parse_with(spec: str) -> tuple[str, dict[str, object]]:
    """``"label:KNOB=VALUE;KNOB=VALUE"`` -> (label, {KNOB: value}); values are Python
    literals (``16384``, ``None``, ``True``)."""
    label, sep, body = spec.partition(":")
    if not sep or not label or not body:
        raise ValueError(f"expected LABEL:KNOB=VALUE;..., got {spec!r}")
    kw: dict[str, object] = {}
    for item in body.split(";"):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise ValueError(f"expected KNOB=VALUE, got {item!r}")
        try:
            kw[k.strip()] = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError) as exc:
            raise ValueError(f"{k.strip()}: {v.strip()!r} is not a Python literal") from exc
    return label, kw


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.ablate_cln")
    ap.add_argument("--once", choices=list(DTYPES), help="run two forwards of the first shape")
    ap.add_argument("--run", type=int, default=1, help="with --once: CLN_TICKET_RUN")
    ap.add_argument("--shape", default=None, help="with --once: BxCxT (default: the first shape)")
    ap.add_argument("--level", type=int, default=0, help="with --once: _DIAG_ABLATE")
    ap.add_argument("--no-runs", action="store_true", help="the levels without the run variants")
    ap.add_argument("--bwd", action="store_true", help="the backward alone (run_backward)")
    ap.add_argument("--shapes", default=None, help="BxCxT,... (default: the two of SHAPES)")
    ap.add_argument("--dtype", default=None, help="fp32,bf16 (default: both)")
    ap.add_argument(
        "--with",
        dest="with_",
        action="append",
        default=[],
        metavar="LABEL:KNOB=VALUE;...",
        help="the four levels again with these knobs set (repeatable; values as Python literals)",
    )
    args = ap.parse_args(argv)
    if args.bwd:
        run_backward([(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)])
        return 0
    if args.once:
        try:
            shape = parse_shapes(args.shape, 3)[0] if args.shape else SHAPES[0]
        except ValueError as exc:
            ap.error(f"--shape: {exc}")
        with knobs(K, {"CLN_TICKET_RUN": args.run, "_DIAG_ABLATE": args.level}):
            run_once("triton", shape, DTYPES[args.once])
        return 0
    levels = {
        "full": {},
        "ablate1 no-prefix": {"_DIAG_ABLATE": 1},
        "ablate2 no-stats": {"_DIAG_ABLATE": 2},
        "ablate3 load-store": {"_DIAG_ABLATE": 3},
    }
    variants = dict(levels)
    # Runs of consecutive tiles per ticket (1 = batch-interleaved).
    for run in () if args.no_runs else (2, 4, 8, 16):
        variants[f"run{run}"] = {"CLN_TICKET_RUN": run}
        variants[f"ablate3 run{run}"] = {"_DIAG_ABLATE": 3, "CLN_TICKET_RUN": run}
    for spec in args.with_:
        try:
            label, kw = parse_with(spec)
        except ValueError as exc:
            ap.error(f"--with: {exc}")
        missing = missing_knobs(K, kw)
        if missing:
            ap.error(f"--with: backends.triton.kernels has no knob {', '.join(missing)}")
        for name, level in levels.items():
            variants[f"{label} {name}"] = {**level, **kw}
    try:
        shapes = parse_shapes(args.shapes, 3) if args.shapes else SHAPES
    except ValueError as exc:
        ap.error(f"--shapes: {exc}")
    if args.dtype:
        for d in args.dtype.split(","):
            if d not in DTYPES:
                ap.error(f"--dtype: unknown {d!r}; known: {', '.join(DTYPES)}")
    run_levels(
        "triton",
        {name: (lambda kw=kw: knobs(K, kw)) for name, kw in variants.items()},
        shapes,
        args.dtype.split(",") if args.dtype else None,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
