"""Host time per call, layer by layer.  (GPU only; a diagnosis tool.)

    python3 -m bench.profile_overhead [backend ...] [--profile]

Host time is the wall time of a loop of calls issued without synchronizing, divided by the
calls, at shapes whose kernels take far less GPU time than their launches: what a Python
training loop pays per call before the GPU has anything to do.  For each backend: the raw
kernel wrappers, ``common.*`` without grad, forward + backward (with and without the affine
parameters), next to the peers' (``F.rms_norm``, the eager cumsum cLN) and to the autograd
engine's own cost (a one-op ``autograd.Function``).  For Triton every row is measured twice:
launches through ``JITFunction.run`` (``NORMK_TRITON_DIRECT_LAUNCH=0``) and direct
(``backends/triton/launch.py``).  ``--profile``: a cProfile of the cLN step afterwards (of the
calling thread only: the backward runs on the autograd engine's device thread and shows as
``run_backward``).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from collections.abc import Callable

import torch

import common
from bench.toolchain import env_var
from common.registry import get_backend


def host_us(fn: Callable[[], object], n: int = 300) -> tuple[float, float]:
    """(host, GPU span) per call, medians over 5 rounds of ``n`` unsynchronized calls: the
    host's wall time, and the GPU's time from the first call's work to the last's (CUDA events).
    Where the span is close to the host time the loop waited on the GPU, so the host time is
    then an upper bound."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    hosts, spans = [], []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t = time.perf_counter()
        e0.record()
        for _ in range(n):
            fn()
        e1.record()
        hosts.append((time.perf_counter() - t) / n * 1e6)
        torch.cuda.synchronize()
        spans.append(e0.elapsed_time(e1) * 1e3 / n)
    return sorted(hosts)[2], sorted(spans)[2]


def _fmt(hs: tuple[float, float]) -> str:
    return f"{hs[0]:8.1f} ({hs[1]:6.1f})"


class _Copy(torch.autograd.Function):
    """One-kernel autograd Function: the engine's and apply's own host cost."""

    @staticmethod
    def forward(ctx, x):  # type: ignore[override]
        return x.clone()

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        return dy.clone()


def cases(name: str) -> dict[str, Callable[[], object]]:
    K = get_backend(name).kernels()
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    # RMSNorm (2048, 4096) bf16; cLN at the seed shape (80, 64, 301) fp32: GPU times of a few
    # microseconds, so the loop measures the host.
    x = torch.randn(2048, 4096, device=dev, dtype=torch.bfloat16, generator=g)
    w = torch.randn(4096, device=dev, dtype=torch.bfloat16, generator=g)
    y, r = torch.empty_like(x), torch.empty(2048, device=dev)
    xr, wr = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    dy = torch.randn(x.shape, device=dev, dtype=x.dtype, generator=g)
    xc = torch.randn(80, 64, 301, device=dev, generator=g)
    gam = torch.randn(64, device=dev, generator=g).requires_grad_(True)
    bet = torch.randn(64, device=dev, generator=g).requires_grad_(True)
    yc, m2 = torch.empty_like(xc), torch.empty(80, device=dev)
    m, rs = torch.empty(80, 301, device=dev), torch.empty(80, 301, device=dev)
    xcr = xc.clone().requires_grad_(True)
    dyc = torch.randn(xc.shape, device=dev, generator=g)

    def nograd(fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            with torch.no_grad():
                return fn()

        return run

    return {
        "raw rmsnorm_forward": lambda: K.rmsnorm_forward(x, w, 1e-6, y, r),
        "raw cln_forward": lambda: K.cln_forward(xc, None, None, 1e-8, None, yc, m, rs, m2),
        "rmsnorm no-grad": nograd(lambda: common.rmsnorm(x, w, backend=name)),
        "cln no-grad": nograd(lambda: common.cln(xc, backend=name)),
        "rmsnorm fwd+bwd": lambda: torch.autograd.grad(
            common.rmsnorm(xr, wr, backend=name), [xr, wr], dy
        ),
        "cln fwd+bwd (x)": lambda: torch.autograd.grad(common.cln(xcr, backend=name), [xcr], dyc),
        "cln fwd+bwd (x, gamma, beta)": lambda: torch.autograd.grad(
            common.cln(xcr, gam, bet, backend=name), [xcr, gam, bet], dyc
        ),
    }


def peers() -> dict[str, Callable[[], object]]:
    dev = torch.device("cuda")
    x = torch.randn(2048, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, device=dev, dtype=torch.bfloat16)
    xr, wr = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    dy = torch.randn_like(x)
    xc = torch.randn(80, 64, 301, device=dev, requires_grad=True)
    dyc = torch.randn_like(xc)
    F = torch.nn.functional
    return {
        "torch.empty (80, 301)": lambda: torch.empty(80, 301, device=dev),
        "autograd: one-op Function fwd+bwd": lambda: torch.autograd.grad(
            _Copy.apply(xc), [xc], dyc
        ),
        "F.rms_norm no-grad": lambda: F.rms_norm(x, (4096,), w, 1e-6),
        "F.rms_norm fwd+bwd": lambda: torch.autograd.grad(
            F.rms_norm(xr, (4096,), wr, 1e-6), [xr, wr], dy
        ),
        "eager cumsum cLN fwd+bwd (x)": lambda: torch.autograd.grad(
            common.cln(xc, backend="eager"), [xc], dyc
        ),
    }


def breakdown(name: str, n: int = 300) -> None:
    """Where the time of one eager forward + backward goes: the host time of a step against
    the time spent inside ``common.api``'s pieces (timers wrapped around them; the backward's
    run on the autograd engine's thread)."""
    from common import api

    spent: dict[str, float] = {}

    def timed(label: str, f: Callable) -> Callable:
        def run(*a: object, **k: object) -> object:
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - t

        return run

    patches = [
        (api, "cln_forward_impl"),
        (api, "cln_backward_impl"),
        (api, "rms_forward_impl"),
        (api, "rms_backward_impl"),
        (api, "_resolve"),
    ]
    fns = [(api._ClnFunction, "forward"), (api._ClnFunction, "backward"),
           (api._RMSNormFunction, "forward"), (api._RMSNormFunction, "backward")]  # fmt: skip
    saved = [(o, a, getattr(o, a)) for o, a in patches] + [(o, a, o.__dict__[a]) for o, a in fns]
    try:
        for o, a in patches:
            setattr(o, a, timed(a, getattr(o, a)))
        for o, a in fns:
            setattr(o, a, staticmethod(timed(f"{o.__name__}.{a}", getattr(o, a))))
        for k, fn in cases(name).items():
            if "fwd+bwd" not in k:
                continue
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
            spent.clear()
            t = time.perf_counter()
            for _ in range(n):
                fn()
            total = (time.perf_counter() - t) / n * 1e6
            torch.cuda.synchronize()
            parts = ", ".join(f"{lbl} {v / n * 1e6:.1f}" for lbl, v in spent.items())
            print(f"  {name:10s} {k:36s} {total:8.1f}: {parts}")
    finally:
        for o, a, v in saved:
            setattr(o, a, v)


def main(argv: list[str]) -> int:
    prof = "--profile" in argv
    names = [a for a in argv if not a.startswith("--")] or ["triton"]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    try:
        import triton

        from backends.triton.launch import direct_supported

        print(f"triton {triton.__version__}; direct launch: {direct_supported() or 'supported'}")
    except ImportError:
        pass
    print("host us per call (GPU span us per call), medians of 5 rounds of 300 calls")
    for k, fn in peers().items():
        print(f"  {'peer':10s} {k:36s} {_fmt(host_us(fn))}")
    for name in names:
        for k, fn in cases(name).items():
            if name == "triton":
                with env_var("NORMK_TRITON_DIRECT_LAUNCH", "0"):
                    slow = host_us(fn)
                with env_var("NORMK_TRITON_DIRECT_LAUNCH", "1"):
                    fast = host_us(fn)
                print(f"  {name:10s} {k:36s} {_fmt(slow)} -> {_fmt(fast)} (run -> direct)")
            else:
                print(f"  {name:10s} {k:36s} {_fmt(host_us(fn))}")
    print("inside one step, us per step (timers around common.api's pieces; nested)")
    for name in names:
        breakdown(name)
    if prof:
        step = cases(names[0])["cln fwd+bwd (x, gamma, beta)"]
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(100):
            step()
        torch.cuda.synchronize()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
