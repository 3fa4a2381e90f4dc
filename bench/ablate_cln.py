"""Where the Triton cLN forward spends its time (GPU only; a diagnostic, not a benchmark).

    python3 -m bench.ablate_cln              # time the ablation levels
    python3 -m bench.ablate_cln --once fp32  # two forward calls, for `ncu --launch-skip 1 -c 1`

Levels (``backends.triton.kernels._DIAG_ABLATE``; outputs are wrong for > 0):
0 = the kernel; 1 = no wait for / reduction of the earlier tiles' aggregates;
2 = also no per-frame statistics; 3 = also no scan and no publication (the
tile is loaded, normalized with constants and stored: the kernel's memory
access pattern alone).  The differences place the time (H200.md: "time
variants that leave one stage out").  Same timer as the benchmark
(CUDA-graph replay), copy bandwidth measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable

import torch

import common
from backends.triton import kernels as K
from bench.timing import copy_bandwidth
from bench.tune import knobs, t_ms

SHAPES = [(16, 512, 4000), (2, 128, 64000)]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def run_once(backend: str, shape: tuple[int, int, int], dtype: torch.dtype) -> None:
    """Two cLN forwards of ``backend`` (for ``ncu --launch-skip 1 -c 1``)."""
    x = torch.randn(shape, device="cuda").to(dtype)
    for _ in range(2):
        common.cln(x, backend=backend)
    torch.cuda.synchronize()


def run_levels(
    backend: str,
    variants: dict[str, Callable[[], contextlib.AbstractContextManager[object]]],
    shapes: list[tuple[int, int, int]],
) -> None:
    """Time ``backend``'s cLN forward under each variant's context (the benchmark's timer,
    CUDA-graph replay) at each shape and dtype; print fractions of the copy bandwidth
    measured in the same run."""
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    for name_d, dtype in DTYPES.items():
        for shape in shapes:
            x = (torch.randn(shape, device="cuda") + 0.5).to(dtype)
            g = torch.rand(shape[1], device="cuda") + 0.5
            b = torch.randn(shape[1], device="cuda")
            nbytes = 2 * x.numel() * x.element_size()
            for name, ctx in variants.items():
                try:
                    with ctx(), torch.no_grad():
                        ms = t_ms(lambda x=x, g=g, b=b: common.cln(x, g, b, backend=backend))
                except RuntimeError as exc:  # e.g. a forced tile that does not fit: go on
                    print(f"{str(shape):18s} {name_d} {name:24s} FAILED {exc}", flush=True)
                    continue
                gbs = nbytes / (ms * 1e-3)
                print(
                    f"{str(shape):18s} {name_d} {name:24s} {ms * 1e3:8.1f} us "
                    f"{gbs / 1e9:6.0f} GB/s {gbs / bw:5.2f}",
                    flush=True,
                )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--once", choices=list(DTYPES), help="run two forwards of the first shape")
    ap.add_argument("--run", type=int, default=1, help="with --once: CLN_TICKET_RUN")
    args = ap.parse_args()
    if args.once:
        with knobs(K, {"CLN_TICKET_RUN": args.run}):
            run_once("triton", SHAPES[0], DTYPES[args.once])
        return 0
    variants = {
        "full": {},
        "ablate1 no-prefix": {"_DIAG_ABLATE": 1},
        "ablate2 no-stats": {"_DIAG_ABLATE": 2},
        "ablate3 load-store": {"_DIAG_ABLATE": 3},
    }
    # Runs of consecutive tiles per ticket (1 = batch-interleaved).
    for run in (2, 4, 8, 16):
        variants[f"run{run}"] = {"CLN_TICKET_RUN": run}
        variants[f"ablate3 run{run}"] = {"_DIAG_ABLATE": 3, "CLN_TICKET_RUN": run}
    run_levels(
        "triton", {name: (lambda kw=kw: knobs(K, kw)) for name, kw in variants.items()}, SHAPES
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
