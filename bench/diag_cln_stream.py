"""Where the cuda_ext streaming cLN forward spends its time (GPU only; a diagnostic).

    python3 -m bench.diag_cln_stream            # time the levels at the target shapes
    python3 -m bench.diag_cln_stream --once     # two forwards of (16, 512, 4000) fp32, for ncu

Levels (``NORMK_CLN_DIAG``, read by the launcher at every call; outputs are wrong for > 0):
0 = the kernel; 1 = no cross-tile wait (the consumer uses constant statistics);
2 = also no statistics and no publication (the ring's load / store alone).  The
register-tile kernel (``CLN_STREAM_PPR = -1``) is timed beside them.  Same timer as
the benchmark (CUDA-graph replay), copy bandwidth measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

import common
from backends.cuda_ext import kernels as K
from bench.timing import copy_bandwidth
from bench.tune import knobs, t_ms

SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--once", action="store_true", help="two forwards of the first shape, fp32")
    args = ap.parse_args()
    if args.once:
        x = torch.randn(SHAPES[0], device="cuda")
        for _ in range(2):
            common.cln(x, backend="cuda_ext")
        torch.cuda.synchronize()
        return 0
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    variants = {
        "regs": ({"CLN_STREAM_PPR": -1}, 0),
        "stream": ({}, 0),
        "stream diag1 no-wait": ({}, 1),
        "stream diag2 load-store": ({}, 2),
        "S2": ({"CLN_STREAM_STAGES": 2}, 0),
        "S2 diag1": ({"CLN_STREAM_STAGES": 2}, 1),
        "S2 diag2": ({"CLN_STREAM_STAGES": 2}, 2),
    }
    for name_d, dtype in DTYPES.items():
        for shape in SHAPES:
            x = (torch.randn(shape, device="cuda") + 0.5).to(dtype)
            g = torch.rand(shape[1], device="cuda") + 0.5
            b = torch.randn(shape[1], device="cuda")
            nbytes = 2 * x.numel() * x.element_size()
            for name, (kw, diag) in variants.items():
                os.environ["NORMK_CLN_DIAG"] = str(diag)
                with knobs(K, kw), torch.no_grad():
                    ms = t_ms(lambda x=x, g=g, b=b: common.cln(x, g, b, backend="cuda_ext"))
                os.environ.pop("NORMK_CLN_DIAG")
                gbs = nbytes / (ms * 1e-3)
                print(
                    f"{str(shape):18s} {name_d} {name:24s} {ms * 1e3:8.1f} us "
                    f"{gbs / 1e9:6.0f} GB/s {gbs / bw:5.2f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
