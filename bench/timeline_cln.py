"""When each tile of the Triton cLN forward or backward does what (GPU only; a diagnostic, not
a benchmark).

    python3 -m bench.timeline_cln [--levels 0,1,3] [--direction fwd|bwd] [--shapes 80x64x301]
        [--tickets atomic,pid]

With ``backends.triton.kernels._DIAG_TIMELINE`` set, every program of the forward records its
SM and five ``%globaltimer`` stamps: start, ticket taken, tile aggregate known (the tile loaded,
its statistics and scan done), exclusive prefix known, output issued.  ``_DIAG_TIMELINE_BWD``
does the same for the backward: start, ticket, the tile's sums known (x and dy loaded, the
per-frame sums done), suffix known, dx issued.  Per target shape and dtype (and ablation level:
0 the kernel, 1 no prefix / suffix wait, 2 (backward) also no sums, 3 the load-store skeleton),
one launch on an idle GPU is recorded, after a check that the stamps leave the outputs bitwise
unchanged, and summarized:

- span: first start to last output issued, against the time the copy bandwidth (measured in
  the same run) needs for the kernel's bytes;
- the phases of a tile (median and 10th / 90th percentiles, us);
- how many programs an SM holds at once;
- the bytes finished per tenth of the span, as a fraction of the copy bandwidth, and how many
  tiles were alive in each tenth: the ramp, the steady state and the tail.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np
import torch

from backends.triton import kernels as K
from bench.shapes import fmt_shape, parse_shape
from bench.timing import copy_bandwidth
from bench.tune import NO_PACE, knobs, t_ms

SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
#: ``--tickets``: the knobs of each ticket kind (the one-wave seed took 11.1 us forward with
#: the counter and 15.2 by program id, cause unknown: NOTES 26.4).
TICKETS: dict[str, dict[str, object]] = {
    "atomic": {"CLN_TICKET_ATOMIC": True},
    "pid": {"CLN_TICKET_ATOMIC": False, "CLN_PID_MIN_TILES_PER_SM": 0},
}
BINS = 10


def _outputs(x: torch.Tensor) -> list[torch.Tensor]:
    """The cLN forward's outputs for ``x``: y, mean, rstd, the last frame's M2."""
    B, C, T = x.shape
    return [
        torch.empty_like(x),
        torch.empty(B, T, device=x.device),
        torch.empty(B, T, device=x.device),
        torch.empty(B, device=x.device),
    ]


#: Per direction: the ablation knob, the timeline knob, the tensors' bytes per element moved
#: (read + written), the names of the two middle phases, and the ablation levels' names.
DIRECTIONS = {
    "fwd": ("_DIAG_ABLATE", "_DIAG_TIMELINE", 2, ("load+stats", "prefix wait")),
    "bwd": ("_DIAG_ABLATE_BWD", "_DIAG_TIMELINE_BWD", 3, ("load+sums", "suffix wait")),
}
LEVELS = {
    "fwd": {0: "kernel", 1: "no prefix wait", 3: "load-store"},
    "bwd": {0: "kernel", 1: "no suffix wait", 2: "no sums", 3: "load-store"},
}


def _inputs(
    shape: tuple[int, ...], dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fresh random x (with an offset), gamma and beta of a cLN of ``shape`` on the GPU."""
    x = (torch.randn(shape, device="cuda") + 0.5).to(dtype)
    return x, torch.rand(shape[1], device="cuda") + 0.5, torch.randn(shape[1], device="cuda")


def _launch(
    direction: str, x: torch.Tensor, g: torch.Tensor, b: torch.Tensor
) -> tuple[Callable[[], None], list[torch.Tensor]]:
    """One launch of ``direction`` on ``x`` and the outputs it writes (the backward's inputs
    come from one forward, dy is drawn afresh)."""
    outs = _outputs(x)
    if direction == "fwd":
        return (lambda: K.cln_forward(x, g, b, 1e-5, None, *outs)), outs
    K.cln_forward(x, g, b, 1e-5, None, *outs)
    _, mean, rstd, _ = outs
    dy = torch.randn_like(x)
    C = x.shape[1]
    grads = [torch.empty_like(x), torch.empty(C, device=x.device), torch.empty(C, device=x.device)]
    return (lambda: K.cln_backward(dy, x, g, mean, rstd, None, *grads)), grads


def record(
    x: torch.Tensor, g: torch.Tensor, b: torch.Tensor, level: int, direction: str = "fwd"
) -> np.ndarray:
    """One recorded launch of ``direction`` at ablation ``level`` -> (tiles, 8) int64: sm, five
    stamps, sequence, tile."""
    ablate, timeline, _, _ = DIRECTIONS[direction]
    p = K._cln_plan(x, forward=direction == "fwd")
    call, outs = _launch(direction, x, g, b)
    buf = torch.full((p.nt * 8,), -1, dtype=torch.int64, device="cuda")
    with knobs(K, {ablate: level}):
        call()  # compile / warm the plain kernel
        ref = [t.clone() for t in outs]
        with knobs(K, {timeline: buf}):
            for _ in range(2):  # the first compiles; the second is recorded
                for t in outs:
                    t.fill_(float("nan"))
                torch.cuda.synchronize()
                call()
                torch.cuda.synchronize()
    if not all(torch.equal(a, r) for a, r in zip(outs, ref, strict=True)):
        raise RuntimeError(f"the stamped {direction} changed the outputs")
    rec = buf.view(p.nt, 8).cpu().numpy()
    if (rec[:, 1:6] <= 0).any():
        raise RuntimeError("a tile left no record")
    return rec


def summarize(
    rec: np.ndarray, x: torch.Tensor, bw: float, label: str, direction: str = "fwd"
) -> None:
    B, C, T = x.shape
    _, _, factor, (load, wait) = DIRECTIONS[direction]
    p = K._cln_plan(x, forward=direction == "fwd")
    t = (rec[:, 1:6] - rec[:, 1].min()).astype(np.float64) / 1e3  # us
    start, tick, agg, pre, end = t.T
    frames = np.minimum(p.bt, T - rec[:, 7] * p.bt)
    tbytes = float(factor) * C * frames * x.element_size()
    span = end.max()
    ideal = tbytes.sum() / bw * 1e6
    print(
        f"  {label}: span {span:6.1f} us, copy of the same bytes {ideal:5.1f} us "
        f"({ideal / span:4.2f}); {p.nt} tiles of {C}x{p.bt}, {p.num_warps} warps"
    )

    def pct(v: np.ndarray) -> str:
        return f"{np.median(v):5.2f} [{np.percentile(v, 10):5.2f}, {np.percentile(v, 90):5.2f}]"

    print(
        f"    ticket {pct(tick - start)}  {load} {pct(agg - tick)}  "
        f"{wait} {pct(pre - agg)}  output {pct(end - pre)}  life {pct(end - start)}"
    )
    # Programs alive on one SM at once (the most seen on any SM).
    most = 0
    for sm in np.unique(rec[:, 0]):
        sel = rec[:, 0] == sm
        ev = sorted([(s, 1) for s in start[sel]] + [(e, -1) for e in end[sel]])
        live = peak = 0
        for _, d in ev:
            live += d
            peak = max(peak, live)
        most = max(most, peak)
    first_done = end.min()
    last_ticket = tick.max()
    print(
        f"    programs per SM (most seen) {most}; first output issued at {first_done:5.1f} us; "
        f"last ticket at {last_ticket:5.1f} us, then {span - last_ticket:5.1f} us to the end"
    )
    edges = np.linspace(0.0, span, BINS + 1)
    done = np.histogram(end, bins=edges, weights=tbytes)[0] / (span / BINS * 1e-6) / bw
    mids = 0.5 * (edges[:-1] + edges[1:])
    alive = [int(((start <= m) & (end > m)).sum()) for m in mids]
    waiting = [int(((agg <= m) & (pre > m)).sum()) for m in mids]
    print("    bytes done per tenth (fraction of copy bw): " + " ".join(f"{v:4.2f}" for v in done))
    print("    tiles alive at each tenth's middle:         " + " ".join(f"{v:4d}" for v in alive))
    print(
        f"    of them in the {wait}:"
        + " " * (28 - len(wait))
        + " ".join(f"{v:4d}" for v in waiting)
    )


def stagger(spreads: list[int], bw: float, shapes: list[tuple[int, ...]]) -> None:
    """The forward with its first wave of tickets spread over each of ``spreads`` ns: graph-
    timed fraction of the copy bandwidth, output checked bitwise against the default, and the
    timeline of each."""
    for name_d, dtype in DTYPES.items():
        for shape in shapes:
            x, g, b = _inputs(shape, dtype)
            nbytes = 2 * x.numel() * x.element_size()
            call, outs = _launch("fwd", x, g, b)
            call()
            ref = [t.clone() for t in outs]
            # The timed calls rotate over 4 copies of x (never L2-resident from the call before).
            xs = [x.clone() for _ in range(4)]
            steps = [_launch("fwd", xk, g, b)[0] for xk in xs]
            w = K._FIRST_WAVE.get(K._wave_key(x, K._cln_plan(x, True), "fwd"), "?")
            print(f"{shape} {name_d}: first wave {w} tickets", flush=True)
            for spread in [0, *spreads]:
                # Staggered, not paced (a pace would replace the stagger).
                with knobs(K, {"CLN_FWD_STAGGER_NS": spread, **NO_PACE}):
                    for t in outs:  # poisoned: a launch that writes nothing must not pass
                        t.fill_(float("nan"))
                    call()
                    same = all(torch.equal(a, r) for a, r in zip(outs, ref, strict=True))
                    ms = t_ms(*steps)
                    frac = nbytes / (ms * 1e-3) / bw
                    print(
                        f"  spread {spread:6d} ns: {ms * 1e3:6.1f} us {frac:4.2f} (same {same})",
                        flush=True,
                    )
                    summarize(record(x, g, b, 0), x, bw, f"spread {spread} ns")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", default="0,1,3", help="ablation levels (0: the kernel)")
    ap.add_argument("--direction", default="fwd", choices=sorted(DIRECTIONS))
    ap.add_argument(
        "--shapes",
        default=",".join(fmt_shape(sh) for sh in SHAPES),
        help="cLN shapes BxCxT, comma-separated (default: the targets)",
    )
    ap.add_argument(
        "--tickets",
        default="",
        help="also per ticket kind, comma-separated: atomic (the counter everywhere), pid "
        "(program ids everywhere, whatever CLN_PID_MIN_TILES_PER_SM says); default: the rule",
    )
    ap.add_argument(
        "--stagger",
        default="",
        help="instead: time (graph replay) the forward with its first wave of tickets spread "
        "over each of these many ns (CLN_FWD_STAGGER_NS), and record the timeline of each",
    )
    args = ap.parse_args(argv)
    try:
        shapes = [parse_shape(v) for v in args.shapes.split(",")]
    except ValueError as e:
        ap.error(f"--shapes: {e}")
    if any(len(sh) != 3 for sh in shapes):
        ap.error("--shapes: cLN shapes are BxCxT")
    kinds = [v for v in args.tickets.split(",") if v]
    if any(v not in TICKETS for v in kinds):
        ap.error(f"--tickets: one of {', '.join(TICKETS)}")
    if not torch.cuda.is_available():
        print("timeline_cln: needs a CUDA device", file=sys.stderr)
        return 1
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    levels = [int(v) for v in args.levels.split(",")]
    if args.stagger:
        if args.direction != "fwd":
            ap.error("--stagger: the forward's only")
        stagger([int(v) for v in args.stagger.split(",")], bw, shapes)
        return 0
    names = LEVELS[args.direction]
    for name_d, dtype in DTYPES.items():
        for shape in shapes:
            x, g, b = _inputs(shape, dtype)
            print(f"{shape} {name_d} {args.direction}", flush=True)
            for kind in kinds or [""]:
                with knobs(K, TICKETS.get(kind, {})):
                    for lv in levels:
                        label = names.get(lv, f"level {lv}") + (f", {kind} tickets" if kind else "")
                        summarize(record(x, g, b, lv, args.direction), x, bw, label, args.direction)
                        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
