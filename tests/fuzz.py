"""Random cases through the shared harness for a while (a maintainer's tool, not collected by
pytest): shapes, dtypes, affine or not, DC offsets, streaming splits, history, parameters
frozen, strided RMSNorm rows, and for Triton the schedule knobs of ``tests/test_triton_paths``
(small tiles, so that small shapes span many tiles and prefix groups).  Every case is checked
with the same functions and tolerances as the tests; the first failure is printed with the
case and its seed (the harness's messages name the seed of the inputs) and the run stops.

    TRITON_INTERPRET=1 python -m tests.fuzz --backend triton --minutes 10
    python -m tests.fuzz --backend cuda_ext --minutes 5        # on a GPU

``--seed`` replays a run's sequence of cases (the inputs of each case draw their own seed,
printed on failure).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterator

import torch

import common
from tests import harness

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _schedules() -> list[str]:
    from tests.test_triton_paths import SCHEDULES

    return list(SCHEDULES)


@contextlib.contextmanager
def _schedule(backend: str, name: str | None) -> Iterator[None]:
    if backend != "triton" or name is None:
        yield
        return
    from tests.test_triton_paths import schedule

    with schedule(name):
        yield


def _case(
    rng: random.Random, backend: str, device: torch.device, gpu: bool
) -> tuple[str, Callable[[], object]]:
    """One random case of what ``backend`` declares: its description and the check to run."""
    spec = common.get_backend(backend)
    dtype = rng.choice([d for d in DTYPES if d in spec.dtypes])
    needs = {"cln_bwd": "cln_bwd", "rms_fwd": "rmsnorm_fwd", "rms_bwd": "rmsnorm_bwd"}
    kinds = ["cln_fwd", "cln_bwd", "cln_stream", "cln_causal", "rms_fwd", "rms_bwd"]
    kind = rng.choice([k for k in kinds if needs.get(k, "cln_fwd") in spec.ops])
    big = 4 if gpu else 1
    if kind.startswith("rms"):
        N = rng.choice([1, 2, 3, 7, 31, 64, 100, 255, 1000, 4097 * big])
        lead = rng.choice([(rng.randint(1, 9),), (rng.randint(1, 3), rng.randint(1, 5))])
        shape = (*lead, N)
        weight = rng.random() < 0.8
        strided = rng.random() < 0.3
        desc = f"{kind} {shape} {dtype} weight={weight} strided={strided}"
        if kind == "rms_fwd":
            return desc, lambda: harness.check_rmsnorm_forward(
                backend, device, shape, dtype, weight, strided
            )
        return desc, lambda: harness.check_rmsnorm_backward(
            backend, device, shape, dtype, weight, strided
        )
    B = rng.randint(1, 4)
    C = rng.choice([1, 2, 3, 5, 8, 16, 20, 33, 64])
    T = rng.choice([1, 2, 3, 17, 64, 67, 130, 200 * big])
    shape = (B, C, T)
    affine = rng.random() < 0.8
    dc = rng.choice([0.0, 0.0, 0.0, 100.0])
    sched = rng.choice([None, None, *_schedules()]) if backend == "triton" else None
    desc = f"{kind} {shape} {dtype} affine={affine} dc={dc} schedule={sched}"

    def run(check: Callable[[], object]) -> Callable[[], object]:
        def go() -> object:
            with _schedule(backend, sched):
                return check()

        return go

    if kind == "cln_fwd":
        nc = rng.random() < 0.2
        desc += f" noncontiguous={nc}"
        return desc, run(
            lambda: harness.check_cln_forward(
                backend, device, shape, dtype, affine, dc, noncontiguous=nc
            )
        )
    if kind == "cln_bwd":
        hist = rng.choice([0, 0, 1, 13])
        wrt = rng.choice([("gamma", "beta"), ("gamma",), ("beta",), ()])
        desc += f" history={hist} wrt={wrt}"
        return desc, run(
            lambda: harness.check_cln_backward(
                backend, device, shape, dtype, affine, dc, history_frames=hist, wrt=wrt
            )
        )
    if kind == "cln_stream":
        return desc, run(lambda: harness.check_cln_streaming(backend, device, shape, dtype, dc))
    if T < 2:
        shape = (B, C, 2)
    return desc, run(lambda: harness.check_cln_causal(backend, device, shape, dtype))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="triton")
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--cases", type=int, default=0, help="stop after this many (0: the time)")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args(argv)
    common.get_backend(args.backend)  # an unknown name: the error lists the known ones
    try:
        device = harness.backend_device(args.backend)
    except BaseException as e:  # pytest.skip: it cannot run here
        if type(e).__name__ != "Skipped":
            raise
        print(f"fuzz: {e}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    print(f"fuzz {args.backend} on {device}, run seed {seed}", flush=True)
    end = time.monotonic() + 60 * args.minutes
    n = 0
    while time.monotonic() < end and (args.cases == 0 or n < args.cases):
        desc, check = _case(rng, args.backend, device, device.type == "cuda")
        n += 1
        try:
            check()
        except BaseException as e:  # a harness assertion, or anything a kernel raised
            if type(e).__name__ == "Skipped":  # the backend cannot run this dtype or op here
                continue
            if isinstance(e, KeyboardInterrupt):
                raise
            print(f"FAILED case {n}: {desc}", flush=True)
            traceback.print_exc()
            return 1
    print(f"{n} cases passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
