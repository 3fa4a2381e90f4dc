"""The benchmark run: copy bandwidth, then per case a correctness check, then timing.

A *group* is one (op, shape, dtype): its inputs (fresh ``torch.randn``, a
seed per group), its float64 reference and reference gradients are made once
and shared by every implementation and mode.  Per implementation:

1. Correctness before timing, on the first input copy, with
   :func:`common.testing.assert_close` and :func:`common.testing.tolerance`
   (``reduce_len`` = C*T for cLN outputs and dx, B*T for dgamma/dbeta, N for
   RMSNorm outputs and dx, rows for dw).  Project backends run with NaN
   poisoning of their output buffers (``common.set_poison``), so a kernel
   that leaves elements unwritten fails.  A project backend that fails is
   reported ``FAILED`` and never timed (a failing forward fails every mode, a
   failing backward the bwd and fwd_bwd modes).  A peer that fails is still
   timed and reported ``inexact``.
2. Timing (:mod:`bench.timing`) of each requested mode:

   * ``fwd``: forward under ``torch.no_grad()``;
   * ``bwd``: backward only: a forward per input copy is kept and
     ``torch.autograd.grad(y, (x, *params), dy, retain_graph=True)`` is timed
     (returns fresh gradients, so nothing accumulates and nothing needs zeroing);
   * ``fwd_bwd``: forward + ``torch.autograd.grad`` of it.

   The inputs are rotated over enough copies that one rotation moves at least
   4x the L2 size, so large cases never start L2-hot.

Bytes model (minimal traffic; parameters and per-row statistics ignored):
fwd 2 x size (read x, write y), bwd 3 x size (read x and dy, write dx),
fwd_bwd 5 x size.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor

import common
import common.api
from bench.impls import (
    COMPILE_PEER,
    EAGER_PEER,
    ForwardFn,
    Impl,
    Params,
    backend_impl,
    peer_impl,
)
from bench.shapes import Shape, fmt_shape
from bench.timing import (
    CopyBandwidth,
    Step,
    Timing,
    copy_bandwidth,
    side_stream,
    time_steps,
)
from bench.toolchain import ptxas_env, ptxas_for
from common.reference import cln_reference, rmsnorm_oracle, rmsnorm_reference
from common.testing import assert_close, rel_error, tolerance

MODES: tuple[str, ...] = ("fwd", "bwd", "fwd_bwd")
BYTES_FACTOR: dict[str, int] = {"fwd": 2, "bwd": 3, "fwd_bwd": 5}

#: A case whose minimal traffic is above this many L2 sizes is "bandwidth-bound".
L2_FACTOR = 4
#: Input copies of one group never take more than this.
MAX_COPY_BYTES = 2 << 30
MAX_COPIES = 64

DTYPE_NAMES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "fp16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp64": torch.float64,
    "float64": torch.float64,
}
#: ``--dtype auto``: what each op runs in in practice (separators train in
#: float32, LLMs in bfloat16).
AUTO_DTYPES: dict[str, torch.dtype] = {"cln": torch.float32, "rmsnorm": torch.bfloat16}


def dtype_name(dtype: torch.dtype) -> str:
    return {
        torch.float32: "fp32",
        torch.float16: "fp16",
        torch.bfloat16: "bf16",
        torch.float64: "fp64",
    }[dtype]


@dataclass
class Config:
    ops: list[str]
    backends: list[str]
    peers: list[str]
    modes: list[str]
    dtypes: dict[str, list[torch.dtype]]
    shapes: dict[str, list[Shape]]
    device: torch.device
    budget_s: float = 0.25
    cuda_graph: str = "off"  # "off", "small" (latency/L2-bound cases only) or "all"
    seed: int = 0
    copy_bytes: int | None = None


@dataclass
class CaseResult:
    op: str
    shape: str
    dtype: str
    mode: str
    impl: str
    kind: str  # "backend" or "peer"
    status: str  # ok | inexact | FAILED | unsupported | skipped | error
    regime: str
    bytes: int
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    gbps: float | None = None
    frac_copy_bw: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    max_rel_error: float | None = None
    errors: dict[str, float] = field(default_factory=dict)
    tolerances: dict[str, float] = field(default_factory=dict)
    timing: str = ""
    copies: int = 0
    samples: int = 0
    message: str = ""

    @property
    def timed(self) -> bool:
        return self.median_us is not None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class RunResult:
    config: Config
    copy_bw: CopyBandwidth
    l2_bytes: int | None
    cases: list[CaseResult]
    notes: list[str]
    wall_s: float
    seed: int

    @property
    def failed(self) -> list[CaseResult]:
        """Project-backend cases that failed the correctness check or errored."""
        return [c for c in self.cases if c.kind == "backend" and c.status in ("FAILED", "error")]


Progress = Callable[[str], None]


# --------------------------------------------------------------------------- helpers
@contextlib.contextmanager
def _poison(enabled: bool) -> Iterator[None]:
    """NaN-fill project outputs (on while checking, off while timing; restored after)."""
    prev = bool(getattr(common.api, "_POISON", False))
    common.set_poison(enabled)
    try:
        yield
    finally:
        common.set_poison(prev)


def l2_cache_bytes(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    return int(torch.cuda.get_device_properties(device).L2_cache_size)


def regime_of(nbytes: int, l2: int | None) -> str:
    if l2 is None:
        return "cpu"
    return "bandwidth-bound" if nbytes > L2_FACTOR * l2 else "latency/L2-bound"


def n_copies(nbytes_per_call: int, size_bytes: int, l2: int | None) -> int:
    """Input copies so that one rotation moves >= 4 x L2 (1 on the CPU)."""
    if l2 is None:
        return 1
    n = math.ceil(L2_FACTOR * l2 / max(nbytes_per_call, 1))
    n = min(n, MAX_COPIES, max(1, MAX_COPY_BYTES // max(size_bytes, 1)))
    return max(1, n)


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class _Group:
    op: str
    shape: Shape
    dtype: torch.dtype
    xs: list[Tensor]
    dys: list[Tensor]
    params: Params
    ref_y: Tensor
    ref_grads: list[Tensor]
    tol_y: float
    tol_grads: list[float]
    grad_names: list[str]


def make_group(
    op: str,
    shape: Shape,
    dtype: torch.dtype,
    device: torch.device,
    seed: int,
    ncopy: int,
    ndy: int,
) -> _Group:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    def randn(*s: int) -> Tensor:
        return torch.randn(s, dtype=torch.float32, device=device, generator=gen).to(dtype)

    xs = [randn(*shape) for _ in range(ncopy)]
    dys = [randn(*shape) for _ in range(ndy)]
    if op == "cln":
        B, C, T = shape
        params: Params = (1.0 + 0.1 * randn(C), 0.1 * randn(C))
        red, red_p = C * T, B * T
        names = ["dx", "dgamma", "dbeta"]
    else:
        N = shape[-1]
        params = (1.0 + 0.1 * randn(N),)
        red, red_p = N, math.prod(shape) // N
        names = ["dx", "dweight"]
    params = tuple(p.to(dtype) for p in params)

    # float64 references of the same (already rounded) inputs.
    if op == "cln":
        ref_y = cln_reference(xs[0], *params)
    else:
        ref_y = rmsnorm_reference(xs[0], *params)
    ref_grads: list[Tensor] = []
    if dys:
        x64 = xs[0].detach().double().requires_grad_(True)
        p64 = [p.detach().double().requires_grad_(True) for p in params]
        if op == "cln":  # the same stable eager code as cln_reference, with autograd
            y64 = common.cln(x64, p64[0], p64[1], 1e-8, backend="eager")
        else:
            y64 = rmsnorm_oracle(x64, p64[0], 1e-6)
        ref_grads = [
            g.detach().cpu()
            for g in torch.autograd.grad(y64, [x64, *p64], dys[0].double())  # type: ignore[arg-type]
        ]
        del x64, p64, y64
    return _Group(
        op=op,
        shape=shape,
        dtype=dtype,
        xs=xs,
        dys=dys,
        params=params,
        ref_y=ref_y.detach().cpu(),
        ref_grads=ref_grads,
        tol_y=tolerance(dtype, reduce_len=red),
        tol_grads=[tolerance(dtype, reduce_len=red)]
        + [tolerance(dtype, reduce_len=red_p)] * (len(names) - 1),
        grad_names=names,
    )


def _check(
    name: str,
    out: Tensor,
    ref: Tensor,
    tol: float,
    errors: dict[str, float],
    tols: dict[str, float],
) -> bool:
    tols[name] = tol
    try:
        errors[name] = assert_close(name, out, ref, tol)
        return True
    except AssertionError:
        errors[name] = rel_error(out, ref)
        return False


# --------------------------------------------------------------------------- one impl
def _run_impl(
    g: _Group,
    impl: Impl,
    modes: list[str],
    cfg: Config,
    l2: int | None,
    copy_bw: CopyBandwidth,
    progress: Progress,
) -> list[CaseResult]:
    dev = cfg.device
    size = math.prod(g.shape) * g.dtype.itemsize
    res = {
        m: CaseResult(
            op=g.op,
            shape=fmt_shape(g.shape),
            dtype=dtype_name(g.dtype),
            mode=m,
            impl=impl.name,
            kind=impl.kind,
            status="ok",
            regime=regime_of(BYTES_FACTOR[m] * size, l2),
            bytes=BYTES_FACTOR[m] * size,
        )
        for m in modes
    }
    is_backend = impl.kind == "backend"
    bad_status = "FAILED" if is_backend else "inexact"
    need_bwd = [m for m in modes if m != "fwd"]

    def mark(ms: list[str], status: str, msg: str) -> None:
        for m in ms:
            res[m].status = status
            res[m].message = msg

    if impl.build is None or not impl.fwd:
        mark(modes, "unsupported" if is_backend else "skipped", impl.reason or "not available")
        return [res[m] for m in modes]
    if not impl.bwd:
        mark(need_bwd, "unsupported", impl.reason)

    try:
        fn: ForwardFn = impl.build()
    except Exception as exc:
        mark(modes, "error" if is_backend else "skipped", f"setup failed: {_short(exc)}")
        return [res[m] for m in modes]

    # ---- correctness before any timing
    fwd_ok = True
    progress(f"{g.op} {fmt_shape(g.shape)} {dtype_name(g.dtype)} {impl.name}: check")
    errs: dict[str, float] = {}
    tols: dict[str, float] = {}
    try:
        with _poison(True), torch.no_grad():
            y = fn(g.xs[0], g.params)
            _sync(dev)
        fwd_ok = _check("y", y, g.ref_y, g.tol_y, errs, tols)
        del y
    except Exception as exc:
        msg = f"forward raised {_short(exc)}"
        mark(modes, "FAILED" if is_backend else "skipped", msg)
        return [res[m] for m in modes]
    fwd_errs, fwd_tols = dict(errs), dict(tols)

    bwd_ok = True
    bwd_errs: dict[str, float] = {}
    bwd_tols: dict[str, float] = {}
    run_bwd = bool(need_bwd) and impl.bwd and (fwd_ok or not is_backend)
    if run_bwd:
        try:
            with _poison(True):
                xg = g.xs[0].detach().requires_grad_(True)
                pg = [p.detach().requires_grad_(True) for p in g.params]
                yg = fn(xg, tuple(pg))
                grads = torch.autograd.grad(yg, [xg, *pg], g.dys[0])
                _sync(dev)
            for name, out, ref, tol in zip(
                g.grad_names, grads, g.ref_grads, g.tol_grads, strict=True
            ):
                bwd_ok &= _check(name, out, ref, tol, bwd_errs, bwd_tols)
            del xg, pg, yg, grads
        except Exception as exc:
            mark(need_bwd, "FAILED" if is_backend else "skipped", f"backward raised {_short(exc)}")
            run_bwd = False

    for m in modes:
        # bwd reports the gradients' errors, and the forward's too when that failed.
        show_fwd = m != "bwd" or not fwd_ok
        e = dict(fwd_errs) if show_fwd else {}
        t = dict(fwd_tols) if show_fwd else {}
        if m != "fwd":
            e.update(bwd_errs)
            t.update(bwd_tols)
        res[m].errors, res[m].tolerances = e, t
        res[m].max_rel_error = max(e.values()) if e else None

    def worst(e: dict[str, float], t: dict[str, float]) -> str:
        return "; ".join(f"{k} {e[k]:.2e} > tol {t[k]:.2e}" for k in e if not e[k] <= t[k])

    def flag(ms: list[str], msg: str) -> None:
        for m in ms:
            if res[m].status in ("ok", "inexact"):
                res[m].status = bad_status
                res[m].message = (res[m].message + "; " if res[m].message else "") + msg

    if not fwd_ok:
        # A backend's wrong forward fails every mode (its backward uses the
        # forward's statistics); a peer's only the modes that produce y.
        flag(
            modes if is_backend else [m for m in modes if m != "bwd"],
            "correctness: " + worst(fwd_errs, fwd_tols),
        )
        if is_backend:
            return [res[m] for m in modes]
    if run_bwd and not bwd_ok:
        flag(need_bwd, "correctness: " + worst(bwd_errs, bwd_tols))

    # ---- timing
    for m in modes:
        r = res[m]
        if r.status not in ("ok", "inexact"):
            continue
        if m != "fwd" and not run_bwd:
            continue
        progress(f"{g.op} {fmt_shape(g.shape)} {dtype_name(g.dtype)} {impl.name}: {m}")
        ncopy = n_copies(r.bytes, size, l2)
        graph = cfg.cuda_graph == "all" or (
            cfg.cuda_graph == "small" and r.regime != "bandwidth-bound"
        )
        try:
            with _poison(False):
                timing = _time_mode(g, fn, m, ncopy, cfg, graph)
        except Exception as exc:
            r.status = "error" if is_backend else "skipped"
            r.message = (r.message + "; " if r.message else "") + f"timing raised {_short(exc)}"
            _sync(dev)
            continue
        r.median_us, r.p20_us, r.p80_us = timing.median_us, timing.p20_us, timing.p80_us
        r.timing, r.samples = timing.method, timing.samples
        r.copies = ncopy
        r.gbps = r.bytes / (timing.median_us * 1e-6) / 1e9
        r.frac_copy_bw = r.gbps / copy_bw.gbps
        if timing.note:
            r.message = (r.message + "; " if r.message else "") + timing.note
    return [res[m] for m in modes]


def make_steps(g: _Group, fn: ForwardFn, mode: str, ncopy: int) -> list[Step]:
    """The callables timed for ``mode``, one per input copy (run them in a grad
    mode of :func:`grad_mode`).  For ``bwd`` this runs the forwards it keeps."""
    xs = g.xs[:ncopy]
    if mode == "fwd":
        params = g.params
        return [lambda x=x: fn(x, params) for x in xs]
    pg = tuple(p.detach().requires_grad_(True) for p in g.params)
    xgs = [x.detach().requires_grad_(True) for x in xs]
    dys = [g.dys[i % len(g.dys)] for i in range(len(xs))]
    if mode == "bwd":
        with torch.enable_grad():
            ys = [fn(x, pg) for x in xgs]  # kept forwards; only the backward is timed

        def bwd_step(y: Tensor, x: Tensor, dy: Tensor) -> Step:
            return lambda: torch.autograd.grad(y, [x, *pg], dy, retain_graph=True)

        return [bwd_step(y, x, dy) for y, x, dy in zip(ys, xgs, dys, strict=True)]

    def fb_step(x: Tensor, dy: Tensor) -> Step:
        return lambda: torch.autograd.grad(fn(x, pg), [x, *pg], dy)

    return [fb_step(x, dy) for x, dy in zip(xgs, dys, strict=True)]


def grad_mode(mode: str) -> contextlib.AbstractContextManager[None]:
    """``no_grad`` for the forward mode, ``enable_grad`` for the others."""
    return torch.no_grad() if mode == "fwd" else torch.enable_grad()


def _time_mode(g: _Group, fn: ForwardFn, mode: str, ncopy: int, cfg: Config, graph: bool) -> Timing:
    dev = cfg.device
    use_graph = graph and dev.type == "cuda"
    # CUDA graphs are captured on a side stream; the kept forwards of the bwd mode
    # must run on it too (autograd runs a backward op on its forward's stream).
    with side_stream(dev) if use_graph else contextlib.nullcontext(), grad_mode(mode):
        steps = make_steps(g, fn, mode, ncopy)
        return time_steps(steps, dev, cfg.budget_s, cuda_graph=use_graph)


# --------------------------------------------------------------------------- the run
def plan(cfg: Config) -> list[tuple[str, Shape, torch.dtype]]:
    """The groups of the run, in order."""
    return [
        (op, shape, dt)
        for op in cfg.ops
        for dt in cfg.dtypes.get(op, [])
        for shape in cfg.shapes.get(op, [])
    ]


def impls_for(cfg: Config, op: str, dtype: torch.dtype) -> list[Impl]:
    out = [backend_impl(op, b, dtype, cfg.device) for b in cfg.backends]
    for p in cfg.peers:
        imp = peer_impl(op, p, dtype, cfg.device)
        if imp is not None:
            out.append(imp)
    return out


def count_cases(cfg: Config) -> int:
    return sum(len(impls_for(cfg, op, dt)) * len(cfg.modes) for op, _s, dt in plan(cfg))


def run(
    cfg: Config,
    progress: Progress | None = None,
    advance: Callable[[int], None] | None = None,
) -> RunResult:
    """Run the whole benchmark described by ``cfg``."""
    say = progress or (lambda _msg: None)
    step = advance or (lambda _n: None)
    t_start = time.perf_counter()
    dev = cfg.device
    notes: list[str] = []
    if dev.type != "cuda":
        notes.append(
            "CPU run: CPU timings of the eager backend and eager peers only. They check that "
            "the harness works; GPU figures (GB/s, fraction of copy bandwidth) need a GPU."
        )
    say("measuring copy bandwidth")
    copy_bw = copy_bandwidth(dev, cfg.copy_bytes)
    l2 = l2_cache_bytes(dev)
    cases: list[CaseResult] = []
    for gi, (op, shape, dtype) in enumerate(plan(cfg)):
        impls = impls_for(cfg, op, dtype)
        if any(i.name == COMPILE_PEER for i in impls):
            torch._dynamo.reset()  # compile once per (shape, dtype), dynamic=False
        size = math.prod(shape) * dtype.itemsize
        ncopy = n_copies(BYTES_FACTOR["fwd"] * size, size, l2)
        bwd_modes = [m for m in cfg.modes if m != "fwd"]
        ndy = max((n_copies(BYTES_FACTOR[m] * size, size, l2) for m in bwd_modes), default=0)
        say(f"{op} {fmt_shape(shape)} {dtype_name(dtype)}: inputs and float64 reference")
        try:
            g = make_group(op, shape, dtype, dev, cfg.seed + 7919 * gi, ncopy, ndy)
        except Exception as exc:  # e.g. out of memory: report and go on
            notes.append(f"{op} {fmt_shape(shape)} {dtype_name(dtype)}: skipped ({_short(exc)})")
            step(len(impls) * len(cfg.modes))
            _cleanup(dev)
            continue
        for imp in impls:
            # Each implementation compiles with the ptxas it has on its own (bench/toolchain.py:
            # torch.compile would otherwise switch Triton's for every later group).
            with ptxas_env(ptxas_for(imp.name == COMPILE_PEER)):
                got = _run_impl(g, imp, cfg.modes, cfg, l2, copy_bw, say)
            cases.extend(got)
            step(len(cfg.modes))
            if imp.name == COMPILE_PEER and (skip := [c for c in got if c.status == "skipped"]):
                notes.append(
                    f"torch.compile peer skipped for {op} {fmt_shape(shape)} "
                    f"{dtype_name(dtype)}: {skip[0].message}"
                )
        del g
        _cleanup(dev)
    _speedups(cases)
    return RunResult(
        config=cfg,
        copy_bw=copy_bw,
        l2_bytes=l2,
        cases=cases,
        notes=notes,
        wall_s=time.perf_counter() - t_start,
        seed=cfg.seed,
    )


def _cleanup(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.empty_cache()


def _speedups(cases: list[CaseResult]) -> None:
    base: dict[tuple[str, str, str, str, str], float] = {}
    for c in cases:
        if c.impl in (EAGER_PEER, COMPILE_PEER) and c.median_us is not None:
            base[(c.op, c.shape, c.dtype, c.mode, c.impl)] = c.median_us
    for c in cases:
        if c.median_us is None:
            continue
        key = (c.op, c.shape, c.dtype, c.mode)
        if (e := base.get((*key, EAGER_PEER))) is not None:
            c.speedup_vs_eager = e / c.median_us
        if (k := base.get((*key, COMPILE_PEER))) is not None:
            c.speedup_vs_compile = k / c.median_us
