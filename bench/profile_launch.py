"""Host time of the pieces of one Triton cLN / RMSNorm call.  (GPU only; a diagnosis tool.)

    python3 -m bench.profile_launch

Each row: the wall time of 2000 unsynchronized repetitions, per repetition (median of 5
rounds, ``bench.profile_overhead.host_us``), at the seed shape (80, 64, 301) float32 and
RMSNorm (2048, 4096) bf16, whose kernels take a few microseconds of GPU time.  A cLN kernel
is never launched without its zero kernel before it (its scratch must be zeroed), so the
kernel's own launch is the pair's time minus the zero kernel's.  ``bench.profile_overhead``
has the whole calls.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

import backends.triton.kernels as K
from backends.triton import launch
from bench.profile_overhead import _Copy, host_us


def us(fn: Callable[[], object], n: int = 2000) -> float:
    return host_us(fn, n)[0]


def main() -> int:
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    B, C, T = 80, 64, 301
    x = torch.randn(B, C, T, device=dev, generator=g)
    gam = torch.randn(C, device=dev, generator=g)
    bet = torch.randn(C, device=dev, generator=g)
    y = torch.empty_like(x)
    mean, rstd = torch.empty(B, T, device=dev), torch.empty(B, T, device=dev)
    m2 = torch.empty(B, device=dev)
    dy = torch.randn(x.shape, device=dev, generator=g)
    dx = torch.empty_like(x)
    dg, db = torch.empty(C, device=dev), torch.empty(C, device=dev)
    xr = torch.randn(2048, 4096, device=dev, dtype=torch.bfloat16, generator=g)
    w = torch.randn(4096, device=dev, dtype=torch.bfloat16, generator=g)
    yr, rr = torch.empty_like(xr), torch.empty(2048, device=dev)
    dyr, dxr, dw = torch.randn_like(xr), torch.empty_like(xr), torch.empty(4096, device=dev)

    def fwd() -> None:
        K.cln_forward(x, gam, bet, 1e-8, None, y, mean, rstd, m2)

    fwd()
    fwd()
    flags = (True, True, False, False, False)
    key = K._launch_key("fwd", x, *flags)
    L = K._LAUNCHES[key]
    p = L.p
    scr = K._scratch(L.n_scr, x, L.pdl, L.early, stamp=L.stamp)
    args = (x, y, gam, bet, mean, rstd, m2, m2, m2, m2, m2, scr, scr, B, C, T, p.ntb, p.ng, 1e-8)
    ck = K._CLN_FWD[(p.nt,)](*args, **L.kernel.kwargs)
    zero_args = (scr, L.n_scr)
    zero_kw = dict(
        BLOCK=1024, EARLY=L.early, STAMP=L.stamp, num_warps=4, **K._pdl_kw(K.CLN_PDL_ZERO)
    )
    zgrid = (K._cdiv(L.n_scr, 1024),)
    zk = K._ZERO[zgrid](*zero_args, **zero_kw)
    stream = launch.current_stream(torch.cuda.current_device())
    rt = launch._knobs().runtime

    def raw_run(c: object, grid: tuple[int, ...], a: tuple[object, ...], kw: dict) -> None:
        tail = (K._CLN_FWD if c is ck else K._ZERO).bind(**kw)._tail(len(a))
        vals = (*a, *tail)  # type: ignore[misc]
        g3 = (grid[0], 1, 1)
        c.run(*g3, stream, c.function, c.packed_metadata, None, rt.launch_enter_hook,  # type: ignore[attr-defined]
              rt.launch_exit_hook, *vals)  # fmt: skip

    def zero_direct() -> None:
        K._ZERO[zgrid](*zero_args, **zero_kw)

    def zero_jit() -> None:
        K._zero_kernel[zgrid](*zero_args, **zero_kw)

    def pair_direct() -> None:
        zero_direct()
        K._CLN_FWD[(p.nt,)](*args, **L.kernel.kwargs)

    def pair_bound() -> None:
        zero_direct()
        L.kernel.launch((p.nt,), *args)

    def pair_jit() -> None:
        zero_jit()
        K._cln_fwd_kernel[(p.nt,)](*args, **L.kernel.kwargs)

    def pair_raw() -> None:
        raw_run(zk, zgrid, zero_args, zero_kw)
        raw_run(ck, (p.nt,), args, L.kernel.kwargs)

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; host us per repetition")
    nkw = len(L.kernel.kwargs)
    print(f"  cLN fwd kernel: {len(args)} runtime args, {nkw} keywords, grid {p.nt}")
    rows = {
        "torch.empty int64 scratch": lambda: torch.empty(L.n_scr, dtype=torch.int64, device=dev),
        "_knob_values()": K._knob_values,
        "_launch_key (fwd)": lambda: K._launch_key("fwd", x, *flags),
        "launch key of the fwd args (arg_key x 19)": lambda: tuple(map(launch.arg_key, args)),
        "zero kernel: JITFunction.run": zero_jit,
        "zero kernel: Kernel (direct)": zero_direct,
        "zero + fwd kernel: JITFunction.run": pair_jit,
        "zero + fwd kernel: Kernel (direct)": pair_direct,
        "zero + fwd kernel: Bound (direct)": pair_bound,
        "zero + fwd kernel: compiled launchers only": pair_raw,
        "_scratch (empty + zero kernel)": lambda: K._scratch(L.n_scr, x, L.pdl, L.early),
        "raw cln_forward (stats, gamma, beta)": fwd,
        "raw cln_backward (dgamma, dbeta)": lambda: K.cln_backward(
            dy, x, gam, mean, rstd, None, dx, dg, db
        ),
        "raw rmsnorm_forward": lambda: K.rmsnorm_forward(xr, w, 1e-6, yr, rr),
        "raw rmsnorm_backward (dw)": lambda: K.rmsnorm_backward(dyr, xr, w, rr, dxr, dw),
        "torch.sum (264, 4096) fp32 -> dw": lambda: torch.sum(
            torch.empty(264, 4096, device=dev), dim=0, out=dw
        ),
    }
    rows.update(_autograd_rows(dev, zero_direct))
    for k, fn in rows.items():
        print(f"  {k:44s} {us(fn):8.2f}")
    for k, fn in {"zero kernel: Kernel (direct)": zero_direct, "torch.empty (80, 301)": (
        lambda: torch.empty(80, 301, device=dev)
    )}.items():  # fmt: skip
        print(f"  {'in a worker thread: ' + k:44s} {_in_thread(fn):8.2f}")
    return 0


def _autograd_rows(dev: torch.device, launch: Callable[[], object]) -> dict[str, Callable]:
    """Host time of one-op autograd Functions whose backward does a little more each time:
    what the engine costs, and what a Triton launch or allocations cost inside a backward
    (which runs on the engine's device thread)."""
    x = torch.randn(80, 64, 301, device=dev, requires_grad=True)
    dy = torch.randn_like(x)

    Copy = _Copy

    class CopyLaunch(Copy):
        @staticmethod
        def backward(ctx, d):  # type: ignore[override]
            launch()
            return d.clone()

    class CopyEmpties(Copy):
        @staticmethod
        def backward(ctx, d):  # type: ignore[override]
            for _ in range(5):
                torch.empty(80, 301, device=dev)
            return d.clone()

    class CopySaved(Copy):
        @staticmethod
        def forward(ctx, t):  # type: ignore[override]
            ctx.save_for_backward(t, t, t, t, t)
            return t.clone()

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, d):  # type: ignore[override]
            _ = ctx.saved_tensors
            return d.clone()

    def step(f: type) -> Callable[[], object]:
        return lambda: torch.autograd.grad(f.apply(x), [x], dy)

    return {
        "autograd: clone Function fwd+bwd": step(Copy),
        "  + a zero-kernel launch in the backward": step(CopyLaunch),
        "  + 5 torch.empty in the backward": step(CopyEmpties),
        "  + 5 saved tensors, once_differentiable": step(CopySaved),
        "clone Function forward alone (grad on)": lambda: Copy.apply(x),
    }


def _in_thread(fn: Callable[[], object]) -> float:
    """``us(fn)`` measured in a separate Python thread (as a backward runs)."""
    import threading

    out: list[float] = []
    th = threading.Thread(target=lambda: out.append(us(fn)))
    th.start()
    th.join()
    return out[0]


if __name__ == "__main__":
    sys.exit(main())
