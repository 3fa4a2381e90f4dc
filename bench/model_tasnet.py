"""A training step of a Conv-TasNet separator's TCN (its temporal convolutional network), with
the cLN its users write (the eager cumsum formula, ``common.peers.cln_cumsum_eager``) or this
project's, eager and under ``torch.compile``: what a speech-separation user gains in a model,
not in one kernel.

    python3 -m bench.model_tasnet                       # H200: B=4, 128 -> 512 channels, T=4000
    python3 -m bench.model_tasnet --backends triton,cuda_ext --out bench/results
    python3 -m bench.model_tasnet --modes eager,compile   # without CUDA graphs
    python3 -m bench.model_tasnet --modes eager --ab-env NORMK_TRITON_DIRECT_LAUNCH=0,1

Each block (Luo & Mesgarani 2019): 1x1 conv to H channels, PReLU, cLN, depthwise dilated conv,
PReLU, cLN, 1x1 conv back, residual; dilations 1, 2, ..., 2^(X-1).  Every variant starts from
the same weights and input; its output and input gradient are checked against the eager
cumsum model's (float32, zero-mean input, where that formula is still accurate) before timing.
The check runs with TF32 off (convolutions in full float32, ``exact_fp32``), the
timing with PyTorch's defaults (TF32 convolutions), as a user trains.  A step is forward,
backward and nothing else (no optimizer), timed with CUDA events around each step, host launches
included (as a user's loop sees them); the median of the budget's steps after a warm-up.  The
first step's wall time includes the compilation.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import sys
import time
from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

import common
from bench.timing import time_steps
from bench.toolchain import env_var
from common.peers import cln_cumsum_eager

#: --modes: how the model runs.
MODES = {
    "eager": "eager",
    "compile": "torch.compile",
    "compile-graphs": 'torch.compile(mode="reduce-overhead")',
}


class CumsumCLN(nn.Module):
    """The cLN most Conv-TasNet code has: cumulative sums, E[x^2] - E[x]^2."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: Tensor) -> Tensor:
        return cln_cumsum_eager(x, self.weight, self.bias)


def make_norm(kind: str) -> Callable[[int], nn.Module]:
    """``cumsum`` or a backend name -> a factory of cLN modules over C channels."""
    if kind == "cumsum":
        return CumsumCLN
    common.get_backend(kind)  # an unknown name fails here, listing the known ones
    return lambda c: common.CumulativeLayerNorm(c, backend=kind)


class Block(nn.Module):
    def __init__(self, n: int, h: int, dilation: int, norm: Callable[[int], nn.Module]) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(n, h, 1),
            nn.PReLU(),
            norm(h),
            nn.Conv1d(h, h, 3, padding=dilation, dilation=dilation, groups=h),
            nn.PReLU(),
            norm(h),
            nn.Conv1d(h, n, 1),
        )

    def forward(self, x: Tensor) -> Tensor:
        return x + self.net(x)


def tcn(n: int, h: int, blocks: int, norm: Callable[[int], nn.Module]) -> nn.Module:
    return nn.Sequential(*(Block(n, h, 2**i, norm) for i in range(blocks)))


def _step(model: nn.Module, x: Tensor, dy: Tensor) -> tuple[Tensor, Tensor]:
    """Forward and backward, the gradients of the input and of every parameter (returned,
    not accumulated: nothing to zero between steps)."""
    torch.compiler.cudagraph_mark_step_begin()  # a new step for CUDA-graph trees (else no-op)
    xr = x.detach().requires_grad_(True)
    y = model(xr)
    grads = torch.autograd.grad(y, [xr, *model.parameters()], dy)
    return y.detach(), grads[0]


@contextlib.contextmanager
def exact_fp32() -> Iterator[None]:
    """Convolutions and matmuls in full float32 (no TF32) for the correctness check: with
    PyTorch's default TF32 convolutions the eager cumsum model and its own torch.compile'd
    twin already differed by 4e-2 in the input gradient on the H200
    (bench/results/nvidia-h200-s46e-tasnet-tf32-check.log), which would hide a wrong cLN."""
    flags = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    dev = torch.device(args.device)
    g = torch.Generator().manual_seed(args.seed)
    torch.manual_seed(args.seed)
    ref_model = tcn(args.n, args.h, args.blocks, make_norm("cumsum")).to(dev)
    x = torch.randn(args.batch, args.n, args.frames, generator=g).to(dev)
    dy = torch.randn(args.batch, args.n, args.frames, generator=g).to(dev)
    with exact_fp32():
        ref_y, ref_dx = _step(ref_model, x, dy)
    rows: list[dict[str, object]] = []
    for kind in ["cumsum", *args.backends]:
        model = tcn(args.n, args.h, args.blocks, make_norm(kind)).to(dev)
        model.load_state_dict(copy.deepcopy(ref_model.state_dict()))
        for mode in args.modes:
            compiled = mode != "eager"
            kw = {"mode": "reduce-overhead"} if mode == "compile-graphs" else {}
            m = torch.compile(model, backend=args.compile_backend, **kw) if compiled else model
            envs = args.ab_values if args.ab_name and kind != "cumsum" else [None]
            t0 = time.perf_counter()
            checks = {}
            for v in envs:
                with _env(args.ab_name, v), exact_fp32():
                    y, dx = _step(m, x, dy)  # compiles (when compiled) and checks
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)
                checks[v] = (_rel(y, ref_y), _rel(dx, ref_dx))
            first_s = time.perf_counter() - t0
            # With --ab-env, the values' timings alternate over --ab-rounds rounds (the host's
            # speed drifts: NOTES 48), each value's figure the median of its rounds.
            times: dict[object, list[float]] = {v: [] for v in envs}
            for _ in range(args.ab_rounds if len(envs) > 1 else 1):
                for v in envs:
                    err_y, err_dx = checks[v]
                    if err_y < args.tol and err_dx < args.tol:
                        with _env(args.ab_name, v):
                            t = time_steps([lambda m=m: _step(m, x, dy)], dev, budget_s=args.budget)
                        times[v].append(t.median_us / 1e3)
            for v in envs:
                err_y, err_dx = checks[v]
                ok = err_y < args.tol and err_dx < args.tol
                ms = sorted(times[v])[len(times[v]) // 2] if ok else float("nan")
                label = kind if v is None else f"{kind} [{args.ab_name}={v}]"
                rows.append(
                    {
                        "cln": label,
                        "mode": MODES[mode],
                        "ms": ms,
                        "first_s": first_s,
                        "err_y": err_y,
                        "err_dx": err_dx,
                        "ok": ok,
                    }
                )
                print(_line(rows[-1]), flush=True)
    return rows


def _env(name: str | None, value: str | None) -> contextlib.AbstractContextManager[None]:
    """The environment variable ``name`` set to ``value`` inside (nothing where None)."""
    if name is None or value is None:
        return contextlib.nullcontext()
    return env_var(name, value)


def _rel(a: Tensor, ref: Tensor) -> float:
    """||a - ref|| / ||ref||.  Norm-wise: with TF32 off the eager cumsum model and its own
    torch.compile'd twin still differed by 1.3e-2 of the largest input-gradient element on the
    H200 (max-abs measure; cuDNN's convolution algorithms differ), at an output error of 5e-7
    (bench/results/nvidia-h200-s46e-tasnet-maxerr-check.log)."""
    return ((a - ref).double().norm() / ref.double().norm()).item()


def _line(r: dict[str, object]) -> str:
    status = "ok" if r["ok"] else "FAILED (not timed)"
    return (
        f"| {r['cln']} | {r['mode']} | {r['ms']:.2f} | {r['first_s']:.1f} | "
        f"{r['err_y']:.1e} / {r['err_dx']:.1e} | {status} |"
    )


def report(args: argparse.Namespace, rows: list[dict[str, object]]) -> str:
    dev = torch.device(args.device)
    gpu = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    base = next(r["ms"] for r in rows if r["cln"] == "cumsum" and r["mode"] == "eager")
    head = [
        f"# Conv-TasNet TCN training step: {gpu}",
        "",
        f"- Versions: torch {torch.__version__}"
        + (f", triton {_triton_version()}" if dev.type == "cuda" else ""),
        f"- Command: `python3 -m bench.model_tasnet {' '.join(sys.argv[1:])}`",
        f"- Model: {args.blocks} blocks, {args.n} -> {args.h} channels, input "
        f"({args.batch}, {args.n}, {args.frames}) float32, seed {args.seed}; a step = forward "
        "+ backward (input and parameter gradients), CUDA events, host launches included",
        "- err: ||difference|| / ||value|| of the output / the input gradient against "
        "the eager cumsum model, both with TF32 off; timed with PyTorch's defaults (TF32 "
        "convolutions)",
        "",
        "| cLN | mode | step ms | first step s | err y / dx | status | vs eager cumsum |",
        "|---|---|---:|---:|---|---|---:|",
    ]
    body = [_line(r)[:-1] + f"| {base / r['ms']:.2f}x |" for r in rows]  # type: ignore[operator]
    return "\n".join(head + body) + "\n"


def _triton_version() -> str:
    try:
        import triton

        return triton.__version__
    except ImportError:
        return "none"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--backends", default="triton", help="project backends, comma-separated")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--n", type=int, default=128, help="bottleneck channels")
    ap.add_argument("--h", type=int, default=512, help="hidden channels (the cLNs')")
    ap.add_argument("--frames", type=int, default=4000)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument(
        "--modes",
        default="eager,compile,compile-graphs",
        help=f"comma-separated, of {', '.join(MODES)} (compile-graphs: CUDA graphs, GPU only)",
    )
    ap.add_argument("--compile-backend", default="inductor")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of timing per variant")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="a folder for the markdown report")
    ap.add_argument(
        "--ab-env",
        default=None,
        help="NAME=V1,V2,...: time each project backend once per value of environment variable "
        "NAME, alternating (e.g. NORMK_TRITON_DIRECT_LAUNCH=0,1)",
    )
    ap.add_argument("--ab-rounds", type=int, default=3, help="alternating rounds of --ab-env")
    args = ap.parse_args(argv)
    args.ab_name, args.ab_values = None, []
    if args.ab_env:
        name, _, values = args.ab_env.partition("=")
        args.ab_name, args.ab_values = name, [v for v in values.split(",") if v]
        if not name or not args.ab_values:
            ap.error("--ab-env: NAME=V1,V2,...")
    args.backends = [b for b in args.backends.split(",") if b]
    args.modes = [m for m in args.modes.split(",") if m]
    for m in args.modes:
        if m not in MODES:
            ap.error(f"--modes: unknown {m!r}; known: {', '.join(MODES)}")
    for b in args.backends:
        make_norm(b)
    rows = run(args)
    text = report(args, rows)
    print(text)
    if args.out:
        import pathlib

        name = "cpu" if args.device == "cpu" else torch.cuda.get_device_name().lower()
        path = pathlib.Path(args.out) / f"{name.replace(' ', '-')}-tasnet.md"
        path.write_text(text)
        print(f"wrote {path}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
