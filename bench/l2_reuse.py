"""Would a cLN forward in two passes (statistics, then normalize) pay where x fits the L2?
(GPU only; a feasibility probe, session 12, bench/results/NOTES.md 15.)

    python3 -m bench.l2_reuse

A two-pass forward reads x twice; if the second read is served from the L2 (x written by
nobody in between, the H200's 50 MB L2), its DRAM traffic is a copy's (read x, write y), in
two phases.  The probe times, per target shape and dtype, over 4 input copies in rotation
(the benchmark's timer, CUDA-graph replay, so no call finds its x in the L2 from the call
before): ``copy`` y.copy_(x); ``read`` x.sum() (a read-only pass); ``read+copy`` the two in
one step (the second pass's x then read soon after the first: L2 hits where it fits);
``rsum_c+copy`` torch.sum(x, 1) (the per-frame reduction over the channels, strided) then the
copy; ``rsum_c`` the reduction alone.  Fractions are of the forward's bytes (2 x x) over the
copy bandwidth of the same run.
"""

from __future__ import annotations

import sys

import torch

from bench.timing import copy_bandwidth
from bench.tune import t_ms

SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]
COPIES = 4


def main() -> int:
    dev = torch.device("cuda")
    bw = copy_bandwidth(dev).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s (torch {torch.__version__})", flush=True)
    for dtype in (torch.float32, torch.bfloat16):
        for shape in SHAPES:
            xs = [(torch.randn(shape, device=dev) + 0.5).to(dtype) for _ in range(COPIES)]
            ys = [torch.empty_like(x) for x in xs]
            nbytes = 2 * xs[0].numel() * xs[0].element_size()
            cases = {
                "copy": [lambda x=x, y=y: y.copy_(x) for x, y in zip(xs, ys)],
                "read": [lambda x=x: x.sum() for x in xs],
                "read+copy": [lambda x=x, y=y: (x.sum(), y.copy_(x)) for x, y in zip(xs, ys)],
                "rsum_c+copy": [
                    lambda x=x, y=y: (torch.sum(x, 1, dtype=torch.float32), y.copy_(x))
                    for x, y in zip(xs, ys)
                ],
                "rsum_c": [lambda x=x: torch.sum(x, 1, dtype=torch.float32) for x in xs],
            }
            for name, steps in cases.items():
                with torch.no_grad():
                    us = t_ms(*steps, budget_s=0.2) * 1e3
                frac = nbytes / (us * 1e-6) / bw
                print(
                    f"{str(shape):18s} {str(dtype)[6:]:9s} {name:14s} {us:8.1f} us  {frac:5.2f}",
                    flush=True,
                )
            del xs, ys
    return 0


if __name__ == "__main__":
    sys.exit(main())
