"""Check and time the shared-memory-tile cLN forward prototype (``cln_smem.py``) against the
Triton backend's forward, both under ``torch.no_grad`` (the forward no backward follows), at
the cLN target shapes (GPU only, sm_90).

    python3 -m bench.gluon_cln.run [--shapes 4x256x16000,...] [--dtype fp32,bf16]
        [--variants default,nw1,...]

Every case is first checked: the prototype's output (its buffer filled with NaN before)
against the float64 reference within the harness tolerance (common.testing), next to the
Triton backend's error.  Then CUDA-graph replay (bench.tune.t_ms, the benchmark's timer), two
input copies rotated; fractions of the copy bandwidth measured in the same run.
"""

from __future__ import annotations

import argparse
import sys

import torch

import common
from bench.gluon_cln.cln_smem import cln_forward_smem
from bench.shapes import fmt_shape, parse_shapes
from bench.timing import copy_bandwidth
from bench.tune import t_ms
from common.reference import cln_reference
from common.testing import rel_error, tolerance

SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
#: name -> keyword arguments of cln_forward_smem.  "wN fF tT cC": N warps, F frames per thread,
#: T warps along the frames (the others along the channels), C channels per thread and chunk.
VARIANTS: dict[str, dict[str, object]] = {
    "default": {},
    "nw1": {"num_warps": 1},
    "nw4": {"num_warps": 4},
    "cc8": {"cc": 8},
    "cc32": {"cc": 32},
    "no stagger": {"stagger_ns": 0},
    "stagger 6us": {"stagger_ns": 6000},
    "level1 no-prefix": {"level": 1},
    "level2 no-stats": {"level": 2},
    "level3 load-store": {"level": 3},
}
for _w, _f, _c in ((4, 1, 8), (4, 2, 8), (2, 2, 16), (4, 4, 8), (4, 2, 16), (2, 1, 16)):
    _kw = {"num_warps": _w, "fpt": _f, "wt": 1, "cc": _c}
    VARIANTS[f"w{_w} f{_f} t1 c{_c}"] = _kw
    VARIANTS[f"w{_w} f{_f} t1 c{_c} level1"] = {**_kw, "level": 1}
    VARIANTS[f"w{_w} f{_f} t1 c{_c} level2"] = {**_kw, "level": 2}
    # The merged prefix polled per thread (``wait=1``), and that with 6 us of stagger.
    VARIANTS[f"w{_w} f{_f} t1 c{_c} tspin"] = {**_kw, "wait": 1}
    VARIANTS[f"w{_w} f{_f} t1 c{_c} tspin st6"] = {**_kw, "wait": 1, "stagger_ns": 6000}
    for _n in (3, 4, 6, 8):  # programs per SM capped (padded shared memory)
        VARIANTS[f"w{_w} f{_f} t1 c{_c} sm{_n}"] = {**_kw, "per_sm": _n}
        VARIANTS[f"w{_w} f{_f} t1 c{_c} sm{_n} level1"] = {**_kw, "per_sm": _n, "level": 1}
    VARIANTS[f"w{_w} f{_f} t1 c{_c} level3"] = {**_kw, "level": 3}


def _smem_steps(xs, ys, g, b, eps, scr, kw) -> list:
    return [
        (lambda x=x, y=y: cln_forward_smem(x, g, b, eps, y, scr=scr, **kw))
        for x, y in zip(xs, ys, strict=True)
    ]


def _triton_steps(xs, g, b, eps) -> list:
    return [(lambda x=x: common.cln(x, g, b, eps, backend="triton")) for x in xs]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=",".join(fmt_shape(s) for s in SHAPES))
    ap.add_argument("--dtype", default="fp32,bf16")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    try:
        shapes = parse_shapes(args.shapes, 3)
    except ValueError as exc:
        ap.error(f"--shapes: {exc}")
    dtypes = args.dtype.split(",")
    if any(d not in DTYPES for d in dtypes):
        ap.error(f"--dtype {args.dtype!r}: known {', '.join(DTYPES)}")
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    dev = torch.device("cuda")
    bw = copy_bandwidth(dev).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    failed = 0
    eps = 1e-5
    for dname in dtypes:
        dtype = DTYPES[dname]
        for shape in shapes:
            B, C, T = shape
            xs = [(torch.randn(shape, device=dev) + 0.5).to(dtype) for _ in range(2)]
            g = torch.rand(C, device=dev) + 0.5
            b = torch.randn(C, device=dev)
            nbytes = 2 * xs[0].numel() * xs[0].element_size()
            scr = torch.empty(B * 2048, dtype=torch.int64, device=dev)
            ref = cln_reference(xs[0], g, b, eps)
            tol = tolerance(dtype, C * T, dc_offset=0.5)
            with torch.no_grad():
                y_tr = common.cln(xs[0], g, b, eps, backend="triton")
                e_tr = rel_error(y_tr, ref)
                for v in variants:
                    kw = VARIANTS[v]
                    ys = [torch.full_like(x, float("nan")) for x in xs]
                    try:
                        cln_forward_smem(xs[0], g, b, eps, ys[0], scr=scr, **kw)
                        torch.cuda.synchronize()
                    except Exception as exc:  # a variant that does not build or fit: go on
                        print(f"{str(shape):18s} {dname} {v:20s} FAILED {exc!r}"[:300], flush=True)
                        failed += 1
                        continue
                    e = rel_error(ys[0], ref)
                    wrong = kw.get("level", 0) == 0 and not e <= max(tol, 2 * e_tr)
                    failed += wrong
                    ms = t_ms(*_smem_steps(xs, ys, g, b, eps, scr, kw))
                    gbs = nbytes / (ms * 1e-3)
                    print(
                        f"{str(shape):18s} {dname} {v:20s} {ms * 1e3:8.1f} us {gbs / bw:5.3f}"
                        f"  err {e:.2e}{' WRONG' if wrong else ''}"
                        f"  shared {getattr(cln_forward_smem, 'last_shared', 0)} B",
                        flush=True,
                    )
                ms = t_ms(*_triton_steps(xs, g, b, eps))
                gbs = nbytes / (ms * 1e-3)
                print(
                    f"{str(shape):18s} {dname} {'triton default':20s} {ms * 1e3:8.1f} us "
                    f"{gbs / bw:5.3f}  err {e_tr:.2e} (tol {tol:.1e})",
                    flush=True,
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
