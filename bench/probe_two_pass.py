"""The Triton cLN in two reads (``backends/triton/two_pass.py``) against the single pass (GPU).

    python3 -m bench.probe_two_pass [--dtype fp32,bf16] [--variants a,b] [--modes fwd,fwd_bwd]

Every variant is a set of module constants of ``backends.triton.kernels`` (``K.``) and
``backends.triton.two_pass`` (``TP.``).  Each case is first checked against the float64
references of the benchmark (``bench.runner.make_group``), then timed with the benchmark's
own timer over as many input copies as the benchmark rotates (one rotation moves at least
4 x the L2), so that no input is found in the L2 from the previous call: the two-pass path's
second read must earn its L2 hits within one call.  Figures are fractions of the copy
bandwidth measured at the start of the run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import sys
from collections.abc import Iterator

import torch

from bench.impls import backend_fn
from bench.profile_rms_bwd import kernel_table
from bench.runner import make_group, make_steps, n_copies
from bench.timing import copy_bandwidth, side_stream, time_steps
from common.testing import assert_close

SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]
SEED = (80, 64, 301)
_ALL = ("fwd", "bwd")


def _two(directions: tuple[str, ...] = _ALL, **tp: object) -> dict[str, object]:
    """The two-pass path for ``directions`` at every item size, with ``TP_*`` knobs."""
    kw: dict[str, object] = {"K.CLN_TWO_PASS": directions, "K.CLN_TWO_PASS_ITEMSIZES": (2, 4)}
    kw.update({f"TP.{k}": v for k, v in tp.items()})
    return kw


VARIANTS: dict[str, dict[str, object]] = {
    "single": {"K.CLN_TWO_PASS": ()},
    "two": _two(),
    "two fwd only": _two(("fwd",)),
    "two bwd only": _two(("bwd",)),
    "two no hints": _two(TP_LD1_EV="", TP_LD2_EV=""),
    "two fwd order": _two(TP_REVERSE=False),
    "two no pdl": {**_two(), "K.CLN_PDL": False},
    # session 30's first defaults (4-warp statistics programs)
    "two s30a": _two(
        TP_ROW_BYTES=256, TP_MIN_PROGRAMS_PER_SM=4, TP_STATS_BLOCK=4096, TP_STATS_WARPS=4
    ),
    "two rows256": _two(TP_ROW_BYTES=256),
    "two rows256 minprog4": _two(TP_ROW_BYTES=256, TP_MIN_PROGRAMS_PER_SM=4),
    "two minprog4": _two(TP_MIN_PROGRAMS_PER_SM=4),
    "two minprog16": _two(TP_MIN_PROGRAMS_PER_SM=16),
    "two stages1": _two(TP_STAGES=1),
    "two stages3": _two(TP_STAGES=3),
    "two stages4": _two(TP_STAGES=4),
    "two sblock1k": _two(TP_STATS_BLOCK=1024),
    "two sblock4k": _two(TP_STATS_BLOCK=4096),
    "two sblock4k s3": _two(TP_STATS_BLOCK=4096, TP_STAGES=3),
    "two swarps2": _two(TP_STATS_WARPS=2),
    "two swarps2 sblock4k": _two(TP_STATS_WARPS=2, TP_STATS_BLOCK=4096),
    "two apply4k": _two(TP_APPLY_BLOCK=4096),
    "two apply16k": _two(TP_APPLY_BLOCK=16384),
    "two awarps2": _two(TP_APPLY_WARPS=2),
    "two awarps8": _two(TP_APPLY_WARPS=8),
    "two apply4k awarps2": _two(TP_APPLY_BLOCK=4096, TP_APPLY_WARPS=2),
    "two unshifted": _two(TP_SHIFTED_SUMS=False),
    "two unfused": _two(TP_FUSED_PREFIX_MAX=0),
    # session 30's third call (before the shifted sums and the fused prefix)
    "two s30c": _two(TP_SHIFTED_SUMS=False, TP_FUSED_PREFIX_MAX=0),
}

_MODULES = {"K": "backends.triton.kernels", "TP": "backends.triton.two_pass"}


@contextlib.contextmanager
def knobs(kw: dict[str, object]) -> Iterator[None]:
    old: list[tuple[object, str, object]] = []
    for key, v in kw.items():
        mod_key, name = key.split(".", 1)
        mod = importlib.import_module(_MODULES[mod_key])
        if not hasattr(mod, name):
            raise AttributeError(f"{_MODULES[mod_key]} has no knob {name}")
        old.append((mod, name, getattr(mod, name)))
        setattr(mod, name, v)
    try:
        yield
    finally:
        for mod, name, v in reversed(old):
            setattr(mod, name, v)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="fp32,bf16")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--modes", default="fwd,fwd_bwd")
    ap.add_argument("--shapes", default="targets,seed")
    ap.add_argument("--budget", type=float, default=0.15)
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        help="instead of timing, the device time of each kernel over N steps (torch.profiler)",
    )
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench.probe_two_pass needs a CUDA GPU", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    bw = copy_bandwidth(dev).gbps * 1e9
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s, L2 {l2 / 2**20:.0f} MiB", flush=True)
    fn = backend_fn("cln", "triton")
    shapes = (SHAPES if "targets" in args.shapes else []) + (
        [SEED] if "seed" in args.shapes else []
    )
    for dname in args.dtype.split(","):
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dname]
        for shape in shapes:
            if shape == SEED and dtype != torch.float32:
                continue
            size = math.prod(shape) * dtype.itemsize
            modes = args.modes.split(",")
            ncopy = max(n_copies(f * size, size, l2) for f in (2, 5))
            g = make_group("cln", shape, dtype, dev, 1234 + sum(shape), ncopy, ncopy)
            # torch's copy of the same bytes, over the same copies
            dst = torch.empty_like(g.xs[0])
            with side_stream(dev):
                steps = [lambda x=x, d=dst: d.copy_(x) for x in g.xs]
                t = time_steps(steps, dev, args.budget, cuda_graph=True).median_us
            print(
                f"{str(shape):18s} {dname:5s} fwd     {'torch copy':16s} {t:8.1f} us "
                f"{2 * size / t / 1e3:6.0f} GB/s {2 * size / (t * 1e-6) / bw:5.3f}",
                flush=True,
            )
            del dst
            for mode in modes:
                factor = 2 if mode == "fwd" else 5
                for name in names:
                    if args.profile:
                        with knobs(VARIANTS[name]):
                            _profile(
                                g, fn, mode, ncopy, args.profile, f"{shape} {dname} {mode} {name}"
                            )
                        continue
                    try:
                        with knobs(VARIANTS[name]):
                            t = _case(g, fn, mode, ncopy, dev, args.budget)
                    except Exception as exc:  # report and go on
                        print(
                            f"{str(shape):18s} {dname:5s} {mode:7s} {name:16s} FAILED "
                            f"{type(exc).__name__}: {str(exc)[:300]}",
                            flush=True,
                        )
                        continue
                    gbs = factor * size / (t * 1e-6)
                    print(
                        f"{str(shape):18s} {dname:5s} {mode:7s} {name:16s} {t:8.1f} us "
                        f"{gbs / 1e9:6.0f} GB/s {gbs / bw:5.3f}",
                        flush=True,
                    )
            del g
            torch.cuda.empty_cache()
    if args.profile:
        try:
            _registers()
        except Exception as exc:  # a Triton without these internals: say so, keep the run
            print(f"registers: {type(exc).__name__}: {exc}", flush=True)
    return 0


def _registers() -> None:
    """Registers, spills and shared memory of every two-pass kernel compiled in this run."""
    from backends.triton import two_pass as TP

    for name in (
        "_stats_kernel",
        "_tile_scan_kernel",
        "_apply_kernel",
        "_bwd_sums_kernel",
        "_tile_suffix_kernel",
        "_bwd_apply_kernel",
    ):
        fn = getattr(TP, name)
        for cache in getattr(fn, "device_caches", {}).values():
            for key, ck in cache[0].items():
                md = ck.metadata
                print(
                    f"{name:20s} regs {ck.n_regs:3d} spills {ck.n_spills:4d} shared "
                    f"{md.shared:6d} warps {md.num_warps} {str(key)[:160]}",
                    flush=True,
                )


def _case(g, fn, mode: str, ncopy: int, dev: torch.device, budget: float) -> float:
    x, params = g.xs[0], g.params
    if mode == "fwd":
        with torch.no_grad():
            assert_close("y", fn(x, params), g.ref_y, g.tol_y)
    else:
        leaves = [t.clone().requires_grad_(True) for t in (x, *params)]
        got = torch.autograd.grad(fn(leaves[0], tuple(leaves[1:])), leaves, g.dys[0])
        for name, gv, want, tol in zip(g.grad_names, got, g.ref_grads, g.tol_grads):
            assert_close(name, gv, want, tol)
    with side_stream(dev), torch.no_grad() if mode == "fwd" else torch.enable_grad():
        steps = make_steps(g, fn, mode, ncopy)
        return time_steps(steps, dev, budget, cuda_graph=True).median_us


def _profile(g, fn, mode: str, ncopy: int, steps: int, title: str) -> None:
    """Device time per call of each kernel of ``mode`` over ``steps`` rotations' calls."""
    with torch.no_grad() if mode == "fwd" else torch.enable_grad():
        calls = make_steps(g, fn, mode, ncopy)
        it = iter(range(10**9))

        def step() -> None:
            calls[next(it) % len(calls)]()

        kernel_table(title, step, steps)


if __name__ == "__main__":
    sys.exit(main())
