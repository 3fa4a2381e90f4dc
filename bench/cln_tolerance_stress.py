"""How often fresh random draws fail the cLN forward tolerance, plain against conditioned.

The CPU measurement behind NOTES section 24 (session 21): at (3, 1, 50) float32 the plain
tolerance failed correct code about once in a thousand draws (a frame of two nearly equal
values); the per-frame conditioned one never did.  Also the eager cumsum formula's miss at a
DC offset of 1000, which the negative control must keep rejecting.

    PYTHONPATH=. python -m bench.cln_tolerance_stress --draws 20000
"""

from __future__ import annotations

import argparse

import torch

import common
from common.peers import cln_cumsum_eager
from common.reference import cln_oracle, cln_reference
from common.testing import rel_error, tolerance
from tests import harness


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=20000, help="draws at (3, 1, 50) float32")
    ap.add_argument("--dc-draws", type=int, default=2000, help="draws of the DC-1000 control")
    ap.add_argument("--backend", default="eager")
    args = ap.parse_args(argv)
    cpu, f32 = torch.device("cpu"), torch.float32
    plain_fail = cond_fail = 0
    for _ in range(args.draws):
        g, _seed = harness.new_generator()
        x = harness.randn((3, 1, 50), f32, cpu, g)
        gamma, beta = harness._params(1, True, f32, cpu, g)
        y = common.cln(x, gamma, beta, backend=args.backend)
        ref = cln_oracle(x.double(), gamma.double(), beta.double())
        err = rel_error(y, ref)
        plain_fail += err > tolerance(f32, 50)
        cond_fail += err > harness.cln_forward_tolerance(x, gamma, ref, f32)
    print(
        f"{args.backend} (3, 1, 50) float32, {args.draws} draws: "
        f"plain tolerance failed {plain_fail}, conditioned failed {cond_fail}"
    )
    errs = []
    for _ in range(args.dc_draws):
        g, _seed = harness.new_generator()
        x = harness.randn((2, 32, 200), f32, cpu, g, 1000.0)
        errs.append(rel_error(cln_cumsum_eager(x), cln_reference(x.double())))
    line = 100 * tolerance(f32, 32 * 200, 1000.0)
    print(
        f"eager cumsum formula at DC 1000, (2, 32, 200), {args.dc_draws} draws: "
        f"error {min(errs):.4f} to {max(errs):.4f}, control line {line:.4f}"
    )


if __name__ == "__main__":
    main()
