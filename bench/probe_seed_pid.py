"""Whether the Triton cLN forward's slowdown by program id at a one-wave grid depends on the
launch before it (GPU only; NOTES 26.4, 28.2).

    python3 -m bench.probe_seed_pid [--shape 80x64x301] [--spacer-us 20] [--budget 0.15]

At the (80, 64, 301) seed, tiles by program id took 14.1 us per forward in back-to-back
CUDA-graph replay against 9.4 us from the atomic counter, yet a single launch on an idle GPU was
not slower by program id (per-tile timelines).  Here each of ``CONFIGS`` (the ticket kinds
with and without ``CLN_PDL``, and the program id with the one wave staggered) is timed three
ways, CUDA-graph replay, one L2-warm input:
- ``back-to-back``: the forward alone, each launch right behind the previous forward;
- ``after sleep``: a ``torch.cuda._sleep`` kernel of about ``--spacer-us`` before each forward
  (the forward then follows a one-block kernel, not another forward's tail), minus the sleep
  alone;
- ``after copy``: a copy of 64 MiB before each forward (a full-GPU kernel that ends all at
  once), minus the copy alone.
The outputs of both ticket kinds are checked bitwise equal first.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from bench.shapes import parse_shape
from bench.timing import current_cuda_device, side_stream, time_steps
from bench.tune import NO_PACE, knobs

ATOMIC = {"CLN_PID_MIN_TILES_PER_SM": 10**9}
PID = {"CLN_PID_MIN_TILES_PER_SM": 0}
#: The configurations timed: each ticket kind with and without PDL, and tiles by program id
#: with the one wave staggered (``CLN_STAGGER_MIN_WAVES`` 0: normally off below two waves), to
#: see whether the counter's serialization (about 1.25 us for the seed's 400 programs, which
#: orders their loads by ticket) is what the program id lacks.
CONFIGS: dict[str, dict[str, object]] = {
    "atomic": ATOMIC,
    "pid": PID,
    "atomic no pdl": {**ATOMIC, "CLN_PDL": False},
    "pid no pdl": {**PID, "CLN_PDL": False},
    **{
        f"pid stagger {ns / 1000:g}us": {
            **PID,
            "CLN_STAGGER_MIN_WAVES": 0,
            "CLN_FWD_STAGGER_NS": ns,
            **NO_PACE,  # staggered, not paced
        }
        for ns in (500, 1000, 2000, 3000)
    },
}


def _us(step: Callable[[], object], dev: torch.device, budget: float) -> float:
    step()
    return time_steps([step], dev, budget_s=budget, cuda_graph=True).median_us


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="80x64x301")
    p.add_argument("--spacer-us", type=float, default=20.0)
    p.add_argument("--budget", type=float, default=0.15)
    args = p.parse_args(argv)
    dev = current_cuda_device("probe_seed_pid")
    if dev is None:
        return 2
    from backends.triton import kernels as K

    B, C, T = parse_shape(args.shape)
    x = torch.randn((B, C, T), device=dev) + 3.0  # a DC offset, as in the benchmark
    g = torch.rand(C, device=dev) + 0.5
    b = torch.randn(C, device=dev)
    y = torch.empty_like(x)
    mean = torch.empty((B, T), device=dev)
    rstd = torch.empty((B, T), device=dev)
    m2 = torch.empty(B, device=dev)
    src = torch.randn(8 << 20, device=dev)  # 32 MiB read + 32 MiB written
    dst = torch.empty_like(src)
    props = torch.cuda.get_device_properties(dev)
    cycles = int(args.spacer_us * 1e-6 * props.clock_rate * 1e3)  # clock_rate is in kHz

    def fwd() -> None:
        K.cln_forward(x, g, b, 1e-5, None, y, mean, rstd, m2)

    def sleep() -> None:
        torch.cuda._sleep(cycles)

    def copy() -> None:
        dst.copy_(src)

    outs = {}
    with side_stream(dev):
        for name, kw in CONFIGS.items():
            with knobs(K, kw):
                y.fill_(float("nan"))
                fwd()
                outs[name] = y.clone()
        differ = [n for n, o in outs.items() if not torch.equal(o, outs["atomic"])]
        if differ:
            print(f"probe_seed_pid: outputs differ from the atomic ticket's: {', '.join(differ)}")
            return 1
        t_sleep = _us(sleep, dev, args.budget)
        t_copy = _us(copy, dev, args.budget)
        print(f"{args.shape} fp32 forward, us; sleep alone {t_sleep:.1f}, copy alone {t_copy:.1f}")
        for name, kw in CONFIGS.items():
            with knobs(K, kw):
                a = _us(fwd, dev, args.budget)
                s = _us(lambda: (sleep(), fwd()), dev, args.budget) - t_sleep
                c = _us(lambda: (copy(), fwd()), dev, args.budget) - t_copy
            print(
                f"  {name:18s} back-to-back {a:6.1f}  after sleep {s:6.1f}  after copy {c:6.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
