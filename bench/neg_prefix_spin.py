"""Negative control of cuda_ext's ``CLN_PREFIX_SPIN`` test (GPU): the prefix waits switched off
(``CLN_PREFIX_SPIN = -1``: each lane folds its words as first loaded, ready or not) must change
the outputs, else ``test_prefix_spin_leaves_the_output_unchanged`` could not tell a wait from
none.  ``python3 -m bench.neg_prefix_spin``; prints one line per dtype and family, exit 1 where
the missing wait went unnoticed.
"""

from __future__ import annotations

import sys

import torch


def main() -> int:
    from backends.cuda_ext import kernels as K
    from bench.tune import knobs
    from tests import harness

    def fwd(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        f = harness.cln_fwd_outputs(x)
        K.cln_forward(x, None, None, 1e-8, None, *f)
        return f

    def bwd(dy: torch.Tensor, x: torch.Tensor, f: tuple[torch.Tensor, ...]) -> torch.Tensor:
        b = harness.cln_bwd_outputs(x)
        K.cln_backward(dy, x, None, f[1], f[2], None, *b)
        return b[0]

    bad = 0
    for family, kw in (("stream", {}), ("regs", {"CLN_STREAM_PPR": -1})):
        for dtype in (torch.float32, torch.bfloat16):
            torch.manual_seed(0)
            x = (torch.randn(8, 64, 65536, device="cuda") + 0.5).to(dtype)
            dy = torch.randn_like(x)
            with knobs(K, {**kw, "CLN_PREFIX_SPIN": 0}):
                ref_f = fwd(x)
                ref_dx = bwd(dy, x, ref_f)
            y_diff = dx_diff = 0
            # The backward from the waiting forward's statistics: each kernel's own wait.
            with knobs(K, {**kw, "CLN_PREFIX_SPIN": -1}):
                for _ in range(5):
                    y_diff = max(y_diff, int((fwd(x)[0] != ref_f[0]).sum()))
                    dx_diff = max(dx_diff, int((bwd(dy, x, ref_f) != ref_dx).sum()))
            print(
                f"{family} {dtype}: no wait changed {y_diff} y and {dx_diff} dx of {x.numel()}",
                flush=True,
            )
            bad += y_diff == 0 or dx_diff == 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
