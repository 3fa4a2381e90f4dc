"""pytest-benchmark flavour of the harness: ``pytest bench/ --backend ...``.

One test per (op, shape, dtype, mode, implementation).  Each test checks
correctness against the float64 reference first (a project backend that fails
fails the test and is not timed), times the case with CUDA events the way
``python -m bench`` does (figures in ``extra_info``: ``gbps``,
``frac_copy_bw``, ``median_us_events`` ...), then lets pytest-benchmark time
the same rotation with a timer that synchronizes the GPU
(:func:`bench.timing.synced_perf_counter`), so that saved runs can be compared
with ``pytest-benchmark compare`` / ``--benchmark-compare``.

Not collected by ``pytest tests/``.  Without a GPU it runs two tiny eager
cases per op, quickly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from bench import runner
from bench.impls import Impl, backend_impl, parse_peers, peer_impl
from bench.shapes import Shape, fmt_shape, resolve_shapes
from bench.timing import CopyBandwidth, copy_bandwidth, synced_perf_counter
from common.registry import available_backends, get_backend

DEVICE = (
    torch.device("cuda", torch.cuda.current_device())
    if torch.cuda.is_available()
    else (torch.device("cpu"))
)
CPU_SHAPES = "cln:2x64x1000,64x2048"
BUDGET_S = 0.25 if DEVICE.type == "cuda" else 0.02


@dataclass(frozen=True)
class BenchCase:
    op: str
    shape: Shape
    dtype: torch.dtype
    mode: str
    impl: str
    kind: str

    @property
    def id(self) -> str:
        dt = runner.dtype_name(self.dtype)
        return f"{self.op}-{fmt_shape(self.shape)}-{dt}-{self.mode}-{self.impl}"


def _opt(config: pytest.Config, name: str) -> str | None:
    try:
        v = config.getoption(name)
    except ValueError:
        return None
    if isinstance(v, (list, tuple)):  # an append-style option defined elsewhere
        v = ",".join(str(x) for x in v)
    return None if v is None else str(v)


def _backends(text: str | None) -> list[str]:
    if text is None or text.strip().lower() == "all":
        return [n for n in available_backends(DEVICE) if not get_backend(n).emulated()]
    return [b.strip() for b in text.split(",") if b.strip()]


def _cases(config: pytest.Config) -> list[BenchCase]:
    ops = [o.strip() for o in (_opt(config, "bench_op") or "cln,rmsnorm").split(",") if o.strip()]
    modes = [m.strip() for m in (_opt(config, "bench_mode") or "fwd").split(",") if m.strip()]
    dt_text = (_opt(config, "bench_dtype") or "auto").lower()
    shapes = resolve_shapes(
        _opt(config, "bench_shapes") or ("targets" if DEVICE.type == "cuda" else CPU_SHAPES), ops
    )
    backends = _backends(_opt(config, "backend"))
    peers = parse_peers(_opt(config, "bench_peers") or "all", DEVICE)
    out = []
    for op in ops:
        if dt_text == "auto":
            dtypes = [runner.AUTO_DTYPES[op]]
        else:
            dtypes = [runner.DTYPE_NAMES[d.strip()] for d in dt_text.split(",") if d.strip()]
        for dt in dtypes:
            for shape in shapes[op]:
                for mode in modes:
                    out.extend(BenchCase(op, shape, dt, mode, b, "backend") for b in backends)
                    for p in peers:
                        if peer_impl(op, p, dt, DEVICE) is not None:
                            out.append(BenchCase(op, shape, dt, mode, p, "peer"))
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        cases = _cases(metafunc.config)
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])


@pytest.fixture(scope="session")
def copy_bw() -> CopyBandwidth:
    return copy_bandwidth(DEVICE)


_group_cache: dict[tuple[str, Shape, torch.dtype], Any] = {}


def _group(case: BenchCase, seed: int) -> Any:
    key = (case.op, case.shape, case.dtype)
    if key not in _group_cache:
        _group_cache.clear()  # one group at a time (memory)
        if DEVICE.type == "cuda":
            torch.cuda.empty_cache()
            torch._dynamo.reset()
        size = math.prod(case.shape) * case.dtype.itemsize
        l2 = runner.l2_cache_bytes(DEVICE)
        ncopy = runner.n_copies(2 * size, size, l2)
        _group_cache[key] = runner.make_group(
            case.op, case.shape, case.dtype, DEVICE, seed, ncopy, max(1, ncopy)
        )
    return _group_cache[key]


def _impl(case: BenchCase) -> Impl:
    if case.kind == "backend":
        return backend_impl(case.op, case.impl, case.dtype, DEVICE)
    imp = peer_impl(case.op, case.impl, case.dtype, DEVICE)
    assert imp is not None
    return imp


@pytest.fixture(autouse=True)
def _free_cuda() -> Iterator[None]:
    yield
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def test_norm(benchmark: Any, case: BenchCase, copy_bw: CopyBandwidth) -> None:
    seed = abs(hash((case.op, case.shape, str(case.dtype)))) % 1_000_000
    g = _group(case, seed)
    imp = _impl(case)
    cfg = runner.Config(
        ops=[case.op],
        backends=[],
        peers=[],
        modes=[case.mode],
        dtypes={},
        shapes={},
        device=DEVICE,
        budget_s=BUDGET_S,
        seed=seed,
    )
    l2 = runner.l2_cache_bytes(DEVICE)
    # Correctness first, then CUDA-event timing: the harness's own figures.
    res = runner._run_impl(g, imp, [case.mode], cfg, l2, copy_bw, lambda _msg: None)[0]
    dt = runner.dtype_name(case.dtype)
    benchmark.group = f"{case.op} {fmt_shape(case.shape)} {dt} {case.mode}"
    benchmark.extra_info.update(
        status=res.status,
        regime=res.regime,
        bytes=res.bytes,
        gbps=res.gbps,
        frac_copy_bw=res.frac_copy_bw,
        median_us_events=res.median_us,
        copy_bw_gbps=copy_bw.gbps,
        max_rel_error=res.max_rel_error,
        timing=res.timing,
    )
    if res.status in ("FAILED", "error"):
        pytest.fail(f"{case.impl}: {res.message}")
    if res.status in ("unsupported", "skipped") or res.median_us is None:
        pytest.skip(res.message or "not timed")

    # pytest-benchmark's own timing of the same rotation, GPU-synchronized.
    assert imp.build is not None
    fn = imp.build()
    size = math.prod(case.shape) * case.dtype.itemsize
    ncopy = runner.n_copies(res.bytes, size, l2)
    with runner.grad_mode(case.mode):
        steps = runner.make_steps(g, fn, case.mode, ncopy)
        cycle = itertools.cycle(steps)

        def one() -> None:
            next(cycle)()

        if DEVICE.type == "cuda" and hasattr(benchmark, "_timer"):
            benchmark._timer = synced_perf_counter
        per_call_s = res.median_us * 1e-6
        iterations = max(len(steps), math.ceil(2e-4 / per_call_s))
        rounds = int(min(max(BUDGET_S / (iterations * per_call_s), 5), 200))
        benchmark.pedantic(one, rounds=rounds, iterations=iterations, warmup_rounds=1)
