"""Negative control of ``CLN_FWD_THREAD_SPIN`` (GPU): its inline PTX replaced by a version that
does not wait (each thread takes its words as first loaded, ready or not) must change the
forward's output, else the test that the knob leaves the output unchanged could not tell a
wait from none.  ``python3 -m bench.neg_thread_spin``; prints one line per dtype, exit 1 where
the broken wait went unnoticed.

The replacement is made in this process only, before the kernel's first compile (Triton reads
the module's constexpr globals then).
"""

from __future__ import annotations

import sys

import torch


def _no_wait(pack: int) -> str:
    return "\n\t".join(f"mov.b64 ${k}, ${pack + k};" for k in range(pack))


def main() -> int:
    from backends.triton import kernels as K
    from bench.tune import knobs
    from tests import harness

    def fwd(x: torch.Tensor) -> torch.Tensor:
        out = harness.cln_fwd_outputs(x)
        K.cln_forward(x, None, None, 1e-8, None, *out)
        return out[0]

    for pk in (1, 2, 4, 8):
        setattr(K, f"_PTX_SPIN_FWD_{pk}", K.tl.constexpr(_no_wait(pk)))
    bad = 0
    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        x = (torch.randn(8, 64, 65536, device="cuda") + 0.5).to(dtype)
        with knobs(K, {"CLN_FWD_THREAD_SPIN": False}):
            ref = fwd(x)
        with knobs(K, {"CLN_FWD_THREAD_SPIN": True}):
            diff = 0
            for _ in range(5):
                y = fwd(x)
                diff = max(diff, int((y != ref).sum()))
        print(f"{dtype}: no-wait PTX changed {diff} of {ref.numel()} outputs", flush=True)
        bad += diff == 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
