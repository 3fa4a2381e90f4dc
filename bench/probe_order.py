"""Does an earlier benchmark group change a later group's figure?  (NOTES 21.4.)

Triton's fp32 (2, 128, 64000) fwd+bwd measured 133.9-136.5 us in every full cLN benchmark and
126.6-127.2 us alone in a fresh process, also right after 20 s of copies in another process
(a hot GPU: NOTES 22).  This runs :func:`bench.runner.run` once per step of a sequence, in one
process, one shape per step, and prints each step's medians, so that the order effect can be
seen step by step::

    python3 -m bench.probe_order --sequence 2x128x64000,16x512x4000,2x128x64000

A step ``hold<N>g`` allocates N GiB and keeps it (the later groups' buffers then lie
elsewhere); ``free`` drops what the holds keep and empties the caching allocator.

``--one-run`` runs all shape steps as the groups of one :func:`bench.runner.run` (as the
benchmark does; no hold or free steps then), and ``--keep-cache`` leaves the caching allocator
full between those groups (the runner otherwise empties it after each group).
"""

from __future__ import annotations

import argparse

import torch

from bench import runner
from bench.runner import DTYPE_NAMES, Config, run
from bench.shapes import Shape, parse_shape
from bench.timing import current_cuda_device


def config(
    args: argparse.Namespace, dev: torch.device, dtype: torch.dtype, shapes: list[Shape], seed: int
) -> Config:
    # Built here, not by the CLI, whose shape list drops repeated shapes.
    return Config(
        ops=["cln"],
        backends=[args.backend],
        peers=[],
        modes=args.modes.split(","),
        dtypes={"cln": [dtype]},
        shapes={"cln": shapes},
        device=dev,
        budget_s=args.budget,
        cuda_graph="all",
        seed=seed,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sequence", required=True, help="comma list of shapes, holdNg and free")
    p.add_argument("--backend", default="triton")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--modes", default="fwd,fwd_bwd")
    p.add_argument("--budget", type=float, default=0.15)
    p.add_argument("--one-run", action="store_true", help="the shape steps as one run's groups")
    p.add_argument("--keep-cache", action="store_true", help="no empty_cache between groups")
    args = p.parse_args(argv)
    dev = current_cuda_device("probe_order")
    if dev is None:
        return 2
    dtype = DTYPE_NAMES[args.dtype]
    steps = [s.strip() for s in args.sequence.split(",")]
    if args.keep_cache:
        runner._cleanup = lambda dev: torch.cuda.synchronize(dev)
    if args.one_run:
        if any(not s[0].isdigit() for s in steps):
            p.error("--one-run takes shape steps only")
        res = run(config(args, dev, dtype, [parse_shape(s) for s in steps], 1000))
        for c in res.cases:
            if c.median_us is not None:
                print(f"{c.shape} {c.mode} {c.impl}: {c.median_us:.1f} us ({c.status})")
        return 0
    held: list[torch.Tensor] = []
    for i, step in enumerate(steps):
        if step.startswith("hold") and step.endswith("g"):
            held.append(torch.empty(int(float(step[4:-1]) * 2**30), dtype=torch.uint8, device=dev))
            print(f"step {i}: {step} (reserved {torch.cuda.memory_reserved(dev) / 2**30:.2f} GiB)")
            continue
        if step == "free":
            held.clear()
            torch.cuda.synchronize(dev)
            torch.cuda.empty_cache()
            print(f"step {i}: free (reserved {torch.cuda.memory_reserved(dev) / 2**30:.2f} GiB)")
            continue
        res = run(config(args, dev, dtype, [parse_shape(step)], 1000 + i))
        figs = ", ".join(
            f"{c.mode} {c.median_us:.1f} us ({c.status})"
            for c in res.cases
            if c.median_us is not None
        )
        print(f"step {i}: {step} {args.dtype} {args.backend}: {figs}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
