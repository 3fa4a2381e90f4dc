"""What the per-call workspace zeroing costs the Triton cLN kernels (GPU only; a diagnostic).

    python3 -m bench.probe_scratch

Each cLN call of the Triton backend zeroes its ticket counter and prefix words with
``torch.zeros`` (a fill kernel) before the cLN kernel.  Under CUDA-graph replay that is one more
node between two bandwidth-bound kernels.  This times, per target shape and dtype (graph replay
of 16 calls over 4 input copies, the benchmark's rotation, median of the samples):

- ``copy``: ``y.copy_(x)``, and ``zeros+copy``: the same after a fill of the forward's
  workspace size (the price of the extra node in front of a streaming kernel);
- ``fwd`` / ``bwd``: ``kernels.cln_forward`` / ``cln_backward`` as they are (with ``CLN_PDL``
  on: ``_zero_kernel``, then the cLN kernel as its programmatic dependent);
- ``fwd plain`` / ``bwd plain``: ``CLN_PDL`` off (``torch.zeros``, then a plain launch);
- ``fwd arena`` / ``bwd arena``: plain launches with every call's workspace taken from one
  arena zeroed *outside* the timed region (what a workspace that needs no zeroing per call,
  e.g. one the kernel leaves zeroed, would time).

Outputs of the arena variants are checked against the plain call's (bitwise).
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

import torch

from backends.triton import kernels as K
from bench.timing import copy_bandwidth, side_stream

SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000), (80, 64, 301)]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
COPIES = 4
ROUNDS = 4  # 16 calls per graph


class _Arena:
    """Stands in for ``torch`` inside the kernels module: ``zeros`` hands out consecutive
    slices of one pre-zeroed int64 arena (``reset`` restarts at slice 0); all else is torch."""

    def __init__(self, words: int, slots: int) -> None:
        self.buf = torch.zeros(words * slots, dtype=torch.int64, device="cuda")
        self.words = words
        self.next = 0

    def reset(self) -> None:
        self.next = 0

    def zeros(self, n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        if dtype != torch.int64 or n > self.words:
            return torch.zeros(n, dtype=dtype, device=device)
        s = self.buf[self.next * self.words : self.next * self.words + n]
        self.next += 1
        return s

    def __getattr__(self, name: str) -> object:
        return getattr(torch, name)


def graph_us(
    calls: list[Callable[[], object]], before: Callable[[], None] | None = None, samples: int = 30
) -> float:
    """Median us per call of ``calls`` replayed ROUNDS times in one CUDA graph; ``before``
    runs ahead of every warm-up, capture and sample, outside the timed region."""
    before = before or (lambda: None)
    dev = torch.device("cuda")
    with side_stream(dev):
        before()
        for c in calls:
            c()
        torch.cuda.synchronize()
        before()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(ROUNDS):
                for c in calls:
                    c()
        torch.cuda.synchronize()
        ts = []
        for _ in range(samples):
            before()
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e) * 1e3 / (ROUNDS * len(calls)))
    return statistics.median(ts)


def case(shape: tuple[int, int, int], name_d: str, dtype: torch.dtype, bw: float) -> None:
    B, C, T = shape
    dev = "cuda"
    xs = [(torch.randn(shape, device=dev) + 0.5).to(dtype) for _ in range(COPIES)]
    dys = [torch.randn(shape, device=dev).to(dtype) for _ in range(COPIES)]
    ys = [torch.empty_like(xs[0]) for _ in range(COPIES)]
    dxs = [torch.empty_like(xs[0]) for _ in range(COPIES)]
    g = (torch.rand(C, device=dev) + 0.5).to(dtype)
    bta = torch.randn(C, device=dev).to(dtype)
    mean = [torch.empty((B, T), device=dev) for _ in range(COPIES)]
    rstd = [torch.empty((B, T), device=dev) for _ in range(COPIES)]
    m2 = [torch.empty(B, device=dev) for _ in range(COPIES)]
    dg = torch.empty(C, device=dev)
    db = torch.empty(C, device=dev)
    pf = K._cln_plan(xs[0], forward=True)
    pb = K._cln_plan(xs[0], forward=False)
    nf = K._SCR_OFF + B * (pf.ntb + pf.ng)
    nb = K._SCR_OFF + 3 * B * (pb.ntb + pb.ng)
    n = xs[0].numel() * xs[0].element_size()

    def fwd(k: int) -> Callable[[], None]:
        return lambda: K.cln_forward(xs[k], g, bta, 1e-5, None, ys[k], mean[k], rstd[k], m2[k])

    def bwd(k: int) -> Callable[[], None]:
        return lambda: K.cln_backward(dys[k], xs[k], g, mean[k], rstd[k], None, dxs[k], dg, db)

    def line(what: str, us: float, factor: int) -> None:
        gbs = factor * n / (us * 1e-6)
        print(
            f"{str(shape):16s} {name_d} {what:14s} {us:8.1f} us {gbs / 1e9:6.0f} GB/s "
            f"{gbs / bw:5.2f}",
            flush=True,
        )

    line("copy", graph_us([lambda k=k: ys[k].copy_(xs[k]) for k in range(COPIES)]), 2)
    line(
        "zeros+copy",
        graph_us(
            [
                lambda k=k: (torch.zeros(nf, dtype=torch.int64, device=dev), ys[k].copy_(xs[k]))
                for k in range(COPIES)
            ]
        ),
        2,
    )
    line("fwd", graph_us([fwd(k) for k in range(COPIES)]), 2)
    ref = [t.clone() for t in (ys[0], mean[0], rstd[0])]
    arena = _Arena(max(nf, nb), ROUNDS * COPIES)
    real = K.torch
    pdl = K.CLN_PDL
    K.CLN_PDL = False  # the arena replaces torch.zeros, which only plain launches call
    line("fwd plain", graph_us([fwd(k) for k in range(COPIES)]), 2)
    line("bwd plain", graph_us([bwd(k) for k in range(COPIES)]), 3)
    K.torch = arena  # type: ignore[assignment]
    try:

        def zero() -> None:
            arena.reset()
            arena.buf.zero_()

        line("fwd arena", graph_us([fwd(k) for k in range(COPIES)], zero), 2)
        same = all(torch.equal(a, b) for a, b in zip(ref, (ys[0], mean[0], rstd[0]), strict=True))
        K.torch = real  # type: ignore[assignment]
        K.CLN_PDL = pdl
        line("bwd", graph_us([bwd(k) for k in range(COPIES)]), 3)
        rb = [t.clone() for t in (dxs[0], dg, db)]
        K.CLN_PDL = False
        K.torch = arena  # type: ignore[assignment]
        line("bwd arena", graph_us([bwd(k) for k in range(COPIES)], zero), 3)
        same_b = all(torch.equal(a, b) for a, b in zip(rb, (dxs[0], dg, db), strict=True))
    finally:
        K.torch = real  # type: ignore[assignment]
        K.CLN_PDL = pdl
    print(
        f"{str(shape):16s} {name_d} arena outputs bitwise equal: fwd {same} bwd {same_b}",
        flush=True,
    )


def main() -> int:
    if not torch.cuda.is_available():
        print("probe_scratch: needs a CUDA device", file=sys.stderr)
        return 1
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    for name_d, dtype in DTYPES.items():
        for shape in SHAPES:
            case(shape, name_d, dtype, bw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
