"""Where the cuda_ext streaming cLN forward spends its time (GPU only; a diagnostic).

    python3 -m bench.diag_cln_stream            # time the levels at the target shapes
    python3 -m bench.diag_cln_stream --once     # two forwards of (16, 512, 4000) fp32, for ncu

Levels (``NORMK_CLN_DIAG``, read by the launcher at every call; outputs are wrong for > 0):
0 = the kernel; 1 = no cross-tile wait (the streaming consumer uses constant statistics, the
hold kernel only publishes); 2 = also no statistics and no publication (the load / store
alone); hold kernel only: 3 = also blockIdx instead of the ticket.  The streaming kernels
(``CLN_HOLD = -1``) and the hold kernel (``include/cln_hold.cuh``, the forward's default) at
its automatic tile shape and at PPR 8 / 16 / 32 are timed, and the register-tile kernel
(``CLN_STREAM_PPR = -1``) beside them.  Same timer as
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
    args = ap.parse_args()
    if args.once:
        run_once("cuda_ext", SHAPES[0], torch.float32)
        return 0
    stream = {"CLN_HOLD": -1}
    variants = {
        "regs": ({"CLN_STREAM_PPR": -1}, 0),
        "stream": (stream, 0),
        "stream diag1 no-wait": (stream, 1),
        "stream diag2 load-store": (stream, 2),
    }
    for name, kw in (
        ("hold", {}),
        ("hold8", {"CLN_HOLD": 8}),
        ("hold16", {"CLN_HOLD": 16}),
        ("hold32", {"CLN_HOLD": 32}),
    ):
        variants[name] = (kw, 0)
        variants[f"{name} diag1 no-wait"] = (kw, 1)
        variants[f"{name} diag2 load-store"] = (kw, 2)
        variants[f"{name} diag3 no-ticket"] = (kw, 3)
    run_levels(
        "cuda_ext",
        {name: (lambda kw=kw, d=d: level(kw, d)) for name, (kw, d) in variants.items()},
        SHAPES,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
