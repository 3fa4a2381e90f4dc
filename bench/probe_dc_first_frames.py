"""How far each backend's float32 cLN forward is from the float64 oracle under a DC offset,
in the frames with little history (README "Known limit"), against the harness's tolerance.

    python3 -m bench.probe_dc_first_frames [--backends triton,cuda_ext,eager] [--draws 3]
        [--noshift]

A frame's mean is a float32 sum of C values; under an offset of D standard deviations that sum
loses about D * 6e-8 * sqrt(C), and the first frames of a sequence have nothing to average it
with.  Each case: fresh draws (never zeros), the harness's own tolerance for that input
(``tests.harness.cln_forward_tolerance``), the worst error of the draws and its ratio to the
tolerance (over 1: the harness would fail it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib

import torch

import common
from common.testing import rel_error
from tests import harness

# --noshift: each compiled backend's CLN_FWD_SHIFT off, in the knob's own type.
NOSHIFT = {"backends.triton.kernels": False, "backends.cuda_ext.kernels": 0}

SHAPES = (
    (2, 512, 1),
    (4, 4096, 1),
    (2, 512, 8),
    (4, 1024, 64),
    (1, 8200, 3),
    (2, 128, 600),
    (1, 1024, 1100),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="triton,cuda_ext,eager")
    ap.add_argument("--offsets", default="100,1000")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument(
        "--noshift",
        action="store_true",
        help="the compiled backends' CLN_FWD_SHIFT off (the frame sums unshifted)",
    )
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        if args.noshift:
            # Through bench.tune.knobs, which refuses a knob the module does not have.
            from bench.tune import knobs

            for mod, off in NOSHIFT.items():
                try:
                    m = importlib.import_module(mod)
                except ImportError:
                    continue
                stack.enter_context(knobs(m, {"CLN_FWD_SHIFT": off}))
        report(args.backends.split(","), [float(o) for o in args.offsets.split(",")], args.draws)


def report(backends: list[str], offsets: list[float], draws: int) -> None:
    """One line per backend, shape and offset: the worst of ``draws`` draws against the
    harness's tolerance."""
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    avail = set(common.available_backends(dev.type))
    print(f"device {torch.cuda.get_device_name() if dev.type == 'cuda' else 'cpu'}")
    head = ("backend", "shape", "offset", "worst err", "tol", "ratio")
    print("{:10s} {:>16s} {:>6s} {:>10s} {:>9s} {:>6s}".format(*head))
    for name in backends:
        if name not in avail:
            print(f"{name:10s} not available here")
            continue
        for shape in SHAPES:
            for dc in offsets:
                cases = []  # (error / tolerance, error, tolerance) of each draw
                for _ in range(draws):
                    gen, _seed = harness.new_generator()
                    x = harness.randn(shape, torch.float32, dev, gen, dc)
                    y = common.cln(x, backend=name)
                    if shape[-1] > 100:  # the harness's long=True: the O(T) float64 reference
                        ref = harness.cln_reference64(x.double().cpu(), None, None)
                        tol = harness.cln_forward_tolerance(x, None, ref, torch.float32, dc)
                    else:
                        ref, tol = harness.cln_oracle_tolerance(x, None, None, torch.float32, dc)
                    err = rel_error(y, ref)
                    cases.append((err / tol, err, tol))
                ratio, err, tol = max(cases)
                print(f"{name:10s} {str(shape):>16s} {dc:6.0f} {err:10.2e} {tol:9.2e} {ratio:6.2f}")


if __name__ == "__main__":
    main()
