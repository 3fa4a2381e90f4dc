"""Timing: the device copy bandwidth and the per-case timing loop.

GPU: CUDA events only.  A *sample* is one rotation over the input copies (each
copy used once, so large inputs are never L2-resident from the previous
call); one start/end event pair brackets each sample, the host never
synchronizes inside the timed region, and the figure is the median over
samples of (elapsed / calls).  With CUDA graphs the rotation (repeated until a
graph holds at least 16 calls) is captured once and replayed, removing the
host's launch overhead for small, latency-bound cases (the caller makes a side
stream current first: :func:`side_stream`).

CPU: ``time.perf_counter`` around each rotation, same median.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import torch

Step = Callable[[], object]

GIB = 1 << 30


@dataclass
class Timing:
    median_us: float
    p20_us: float
    p80_us: float
    min_us: float
    samples: int
    calls_per_sample: int
    method: str  # "cuda-events", "cuda-graph" or "cpu-perf-counter"
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class CopyBandwidth:
    gbps: float  # (read + write bytes) / median time
    nbytes: int  # size of the copied buffer (each of src and dst)
    median_us: float
    reps: int
    method: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _summary(per_call_s: list[float], calls: int, method: str, note: str = "") -> Timing:
    us = [t * 1e6 for t in per_call_s]
    return Timing(
        median_us=statistics.median(us),
        p20_us=_quantile(us, 0.2),
        p80_us=_quantile(us, 0.8),
        min_us=min(us),
        samples=len(us),
        calls_per_sample=calls,
        method=method,
        note=note,
    )


# --------------------------------------------------------------------------- copy bandwidth
def copy_bandwidth(
    device: torch.device, nbytes: int | None = None, reps: int = 20
) -> CopyBandwidth:
    """Device-to-device copy bandwidth: ``dst.copy_(src)``, read + write bytes counted.

    GPU: a 2 GiB buffer by default (well above any L2), or a quarter of the free
    memory if that is less.  CPU: a 256 MiB host memcpy (only so the CPU
    table has a reference line; it is not a GPU figure).
    """
    if device.type == "cuda":
        if nbytes is None:
            free, _total = torch.cuda.mem_get_info(device)
            nbytes = min(2 * GIB, (free // 4) >> 20 << 20)
        src = torch.empty(nbytes, dtype=torch.uint8, device=device)
        src.random_(0, 256)  # not zeros: never time on zeros
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        torch.cuda.synchronize(device)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for s, e in zip(starts, ends, strict=True):
            s.record()
            dst.copy_(src)
            e.record()
        torch.cuda.synchronize(device)
        ms = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
        del src, dst
        torch.cuda.empty_cache()
        med_s = statistics.median(ms) / 1e3
        method = f"torch copy_ of {nbytes / GIB:.2f} GiB uint8, CUDA events, median of {reps}"
    else:
        nbytes = nbytes or 256 * (1 << 20)
        src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
        dst = torch.empty_like(src)
        dst.copy_(src)
        times = []
        for _ in range(max(3, reps // 4)):
            t0 = time.perf_counter()
            dst.copy_(src)
            times.append(time.perf_counter() - t0)
        med_s = statistics.median(times)
        reps = len(times)
        method = f"host memcpy (torch copy_) of {nbytes >> 20} MiB, perf_counter, median of {reps}"
    return CopyBandwidth(
        gbps=2 * nbytes / med_s / 1e9,
        nbytes=nbytes,
        median_us=med_s * 1e6,
        reps=reps,
        method=method,
    )


# --------------------------------------------------------------------------- case timing
def time_steps(
    steps: list[Step],
    device: torch.device,
    budget_s: float = 0.25,
    cuda_graph: bool = False,
    min_samples: int = 5,
    max_samples: int = 2000,
) -> Timing:
    """Median time of one call of ``steps[i]``, rotating over all of them.

    ``budget_s`` is the rough time spent (warm-up about a fifth of it).  The
    steps must already have run once (compilation and autotuning happen in the
    correctness check before timing).
    """
    if not steps:
        raise ValueError("nothing to time")
    if device.type != "cuda":
        return _time_cpu(steps, budget_s, min_samples, max_samples)
    note = ""
    if cuda_graph:
        try:
            return _time_cuda_graph(steps, device, budget_s, min_samples, max_samples)
        except Exception as exc:  # capture is optional: fall back to plain events
            with contextlib.suppress(Exception):
                torch.cuda.synchronize(device)
            note = f"CUDA graph capture failed ({type(exc).__name__}: {str(exc)[:120]}); events"
    return _time_cuda_events(steps, device, budget_s, min_samples, max_samples, note)


def _rotation(steps: list[Step]) -> Callable[[], None]:
    def run() -> None:
        for s in steps:
            s()

    return run


def _event_loop(
    body: Callable[[], None],
    calls: int,
    device: torch.device,
    budget_s: float,
    min_samples: int,
    max_samples: int,
    method: str,
    note: str,
) -> Timing:
    # Estimate the cost of one sample (3 samples after one untimed one).
    body()
    torch.cuda.synchronize(device)
    s0 = torch.cuda.Event(enable_timing=True)
    e0 = torch.cuda.Event(enable_timing=True)
    s0.record()
    for _ in range(3):
        body()
    e0.record()
    e0.synchronize()
    est_s = max(s0.elapsed_time(e0) / 3 / 1e3, 1e-7)
    n_warm = int(min(max(0.2 * budget_s / est_s, 1), 500))
    n = int(min(max(0.8 * budget_s / est_s, min_samples), max_samples))
    for _ in range(n_warm):
        body()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for s, e in zip(starts, ends, strict=True):  # timed region: no host syncs
        s.record()
        body()
        e.record()
    torch.cuda.synchronize(device)
    per_call = [s.elapsed_time(e) / 1e3 / calls for s, e in zip(starts, ends, strict=True)]
    return _summary(per_call, calls, method, note)


def _time_cuda_events(
    steps: list[Step],
    device: torch.device,
    budget_s: float,
    min_samples: int,
    max_samples: int,
    note: str = "",
) -> Timing:
    return _event_loop(
        _rotation(steps),
        len(steps),
        device,
        budget_s,
        min_samples,
        max_samples,
        "cuda-events",
        note,
    )


def _time_cuda_graph(
    steps: list[Step],
    device: torch.device,
    budget_s: float,
    min_samples: int,
    max_samples: int,
) -> Timing:
    stream = torch.cuda.current_stream(device)
    if stream == torch.cuda.default_stream(device):
        raise RuntimeError("CUDA graph timing must run inside bench.timing.side_stream()")
    rot = _rotation(steps)
    rounds = max(1, math.ceil(16 / len(steps)))
    for _ in range(2):  # warm-up on the capture stream, as capture requires
        rot()
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(rounds):
            rot()
    torch.cuda.synchronize(device)
    t = _event_loop(
        graph.replay,
        rounds * len(steps),
        device,
        budget_s,
        min_samples,
        max_samples,
        "cuda-graph",
        "",
    )
    del graph
    return t


def current_cuda_device(tool: str) -> torch.device | None:
    """The current CUDA device for a GPU-only tool, or None after saying on stderr that ``tool``
    needs one."""
    if not torch.cuda.is_available():
        print(f"{tool}: needs a CUDA device", file=sys.stderr)
        return None
    return torch.device("cuda", torch.cuda.current_device())


@contextlib.contextmanager
def side_stream(device: torch.device) -> Iterator[None]:
    """Make a fresh (non-default) stream current: what graph capture needs."""
    cur = torch.cuda.current_stream(device)
    side = torch.cuda.Stream(device)
    side.wait_stream(cur)
    with torch.cuda.stream(side):
        yield
    cur.wait_stream(side)


def synced_perf_counter() -> float:
    """``time.perf_counter`` after a device synchronize: a pytest-benchmark timer
    (``--benchmark-timer=bench.timing.synced_perf_counter``) that counts GPU work."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter()


def _time_cpu(steps: list[Step], budget_s: float, min_samples: int, max_samples: int) -> Timing:
    rot = _rotation(steps)
    est_s = math.inf
    for _ in range(3):  # the fastest of 3: one stray slow call must not set the count
        t0 = time.perf_counter()
        rot()
        est_s = min(est_s, time.perf_counter() - t0)
    est_s = max(est_s, 1e-7)
    n = int(min(max(budget_s / est_s, min_samples), max_samples))
    per_call = []
    for _ in range(n):
        t0 = time.perf_counter()
        rot()
        per_call.append((time.perf_counter() - t0) / len(steps))
    return _summary(per_call, len(steps), "cpu-perf-counter")
