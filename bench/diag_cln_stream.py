"""Where the cuda_ext streaming cLN forward spends its time (GPU only; a diagnostic).

    python3 -m bench.diag_cln_stream            # time the levels at the target shapes
    python3 -m bench.diag_cln_stream --once     # two forwards of (16, 512, 4000) fp32, for ncu

Levels (``NORMK_CLN_DIAG``, read by the launcher at every call; outputs are wrong for > 0):
0 = the kernel; 1 = no cross-tile wait (the consumer uses constant statistics);
2 = also no statistics and no publication (the ring's load / store alone); 3 (4) = no
wait for the tiles of the grid's first (last) round only, the rest of the kernel intact.  The
register-tile kernel (``CLN_STREAM_PPR = -1``) is timed beside them.  Same timer as
the benchmark (CUDA-graph replay), copy bandwidth measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

import torch

from backends.cuda_ext import kernels as K
from bench.ablate_cln import run_levels, run_once
from bench.tune import knobs

SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]


@contextlib.contextmanager
def level(kw: dict[str, object], diag: int) -> Iterator[None]:
    """The module knobs ``kw`` and ``NORMK_CLN_DIAG = diag`` for the calls inside."""
    os.environ["NORMK_CLN_DIAG"] = str(diag)
    try:
        with knobs(K, kw):
            yield
    finally:
        os.environ.pop("NORMK_CLN_DIAG", None)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--once", action="store_true", help="two forwards of the first shape, fp32")
    ap.add_argument("--variants", default="", help="comma-separated subset (default: all)")
    args = ap.parse_args()
    if args.once:
        run_once("cuda_ext", SHAPES[0], torch.float32)
        return 0
    variants = {
        "regs": ({"CLN_STREAM_PPR": -1}, 0),
        "stream": ({}, 0),
        "stream diag1 no-wait": ({}, 1),
        "stream diag2 load-store": ({}, 2),
        "stream diag3 no-wait-first-round": ({}, 3),
        "stream diag4 no-wait-last-round": ({}, 4),
        "D1": ({"CLN_STREAM_LEAD": 1}, 0),
        "D1 diag1": ({"CLN_STREAM_LEAD": 1}, 1),
        "D1 diag2": ({"CLN_STREAM_LEAD": 1}, 2),
        "cp.async": ({"CLN_STREAM_TMA": -1}, 0),
        "cp.async diag1": ({"CLN_STREAM_TMA": -1}, 1),
        "cp.async diag2": ({"CLN_STREAM_TMA": -1}, 2),
    }
    only = [v for v in args.variants.split(",") if v] if args.variants else list(variants)
    run_levels(
        "cuda_ext",
        {
            name: (lambda kw=kw, d=d: level(kw, d))
            for name, (kw, d) in variants.items()
            if name in only
        },
        SHAPES,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
