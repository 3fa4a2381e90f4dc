"""The ``cuda_ext`` backend's kernels: CUDA C++ built on first use.

The four functions of :mod:`common.kernel_api` call into a C++ extension
that ``torch.utils.cpp_extension.load`` compiles the first time a kernel is
needed (a minute or so) and caches on disk:

* sources: ``csrc/binding.cpp`` (torch binding) and ``csrc/*.cu`` (launchers
  and the kernels of ``include/*.cuh``, which know nothing of torch);
* the module name carries a hash of every source and header, the build flags,
  the GPU architecture, and the torch and CUDA versions, so an edit, another
  GPU or another torch gets a build of its own and never a stale one;
* the build directory is ``$TORCH_EXTENSIONS_DIR/<name>`` when that variable
  is set, else torch's default (``~/.cache/torch_extensions/...``);
* concurrent builds are safe: torch serializes them with a lock file in the
  build directory, and we hold an ``fcntl`` lock beside it around build and
  import, so a process killed mid-build (which leaves torch's lock file
  behind and would make every later process wait forever) is recovered from:
  the kernel drops our lock with the process, and the next holder removes the
  orphaned torch lock.

Run ``python -m backends.cuda_ext.kernels --selftest`` on a CUDA machine to
compare every function with :mod:`common.eager` (float64) and print relative
errors; ``--bench`` prints bandwidth figures for the target shapes.  Knob
sweeps (the cLN kernel family and tile shape ``CLN_STREAM_*``, the group size
``CLN_GROUP_TILES``) live in ``python -m bench.tune --backend cuda_ext``;
``python -m bench.diag_cln_stream`` times the streaming kernel with stages left out.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import torch
from torch import Tensor

from common.kernel_api import ClnStateTuple, acc_dtype
from common.registry import BackendUnavailableError

_HERE = Path(__file__).resolve().parent
_INCLUDE_DIRS = (_HERE / "include", _HERE / "csrc")
_SOURCES = (
    "csrc/binding.cpp",
    "csrc/common_launch.cu",
    "csrc/cln_fwd.cu",
    "csrc/cln_bwd.cu",
    "csrc/rms_fwd.cu",
    "csrc/rms_bwd.cu",
)
# No --use_fast_math: it would turn the per-frame / per-row 1/sqrt and the
# Chan-combine divisions into approximations for no measurable gain (both
# ops are memory bound; the math is a few flops per byte).  -lineinfo costs
# nothing at run time and lets a profiler map SASS back to source lines.
_CUDA_FLAGS = ("-O3", "-lineinfo")
_CXX_FLAGS = ("-O3",)

# cLN kernels.  Both families publish each tile's aggregate, then reduce the
# tile's exclusive prefix from the earlier tiles' published words in a fixed
# order (bitwise deterministic), two-level: tiles form groups of G, a
# group-start tile also publishes the group prefix, and every tile reduces at
# most G words.
#   * the streaming kernels (include/cln_stream.cuh, the default): persistent
#     blocks, all resident (a cooperative launch), block b takes the tiles
#     b, b + grid, ...; tiles stream through a ring of shared-memory stages
#     (cp.async); producer warps publish the statistics, a scan warp waits for
#     the prefix, output warps write.  On the H200 0.61-0.73 (fp32) /
#     0.44-0.56 (bf16) of copy bandwidth forward, 0.56-0.62 / 0.37-0.47
#     forward+backward at the target shapes, against 0.32-0.51 / 0.24-0.33
#     and 0.31-0.45 / 0.25-0.33 for the register kernels
#     (bench/results/nvidia-h200-s7e-tune-cln-defaults.log, -s3-).
#   * the register-tile kernels (include/cln_kernels.cuh): one block per tile,
#     tiles claimed by tickets, the tile in registers.  Used where the
#     streaming ring does not fit the shared memory (C past ~1500 in fp32).
# Short sequences skip the cross-tile machinery in the forward: the resident
# kernel (include/cln_resident.cuh) keeps a whole sequence in one block's
# shared memory (one block per batch item, no workspace, no memset).
# Knobs, read at every call and passed to the launchers as plain ints, so that
# a GPU sweep changes them without a rebuild (see cln_knobs, bench.tune):
#   CLN_GROUP_TILES    G; <= 0: the C++ default, also 256.  256 rather than 1024:
#                      (2, 128, 64000) fp32 fwd 0.31 vs 0.27 with the register kernels.
#   CLN_STREAM_PPR     -1: the register-tile kernels; 0: the streaming kernels with the
#                      launcher's automatic tile shape (csrc/cln_common.h, stream_plan);
#                      4 / 8 / 16: that many 16-byte packs per tile row.
#   CLN_STREAM_STAGES  0: automatic (2 or 3); 2-4: the ring depth S.
#   CLN_STREAM_LEAD    0: automatic (the TMA path: the output warps refill each stage as
#                      they finish it, and the plan takes 3 stages; the cp.async path: 1);
#                      1..S-1: the producer refills the stages, this many tiles ahead.
#   CLN_STREAM_TMA     0: the streaming kernels copy their tiles with the TMA
#                      (include/tma.cuh) where it applies (sm_90+, T a multiple of 16
#                      bytes, 16-byte aligned tensors, not float64), else cp.async;
#                      -1: always cp.async; 1: the TMA, raising where it does not apply.
# A forced shape that does not fit the shared memory raises.  Split STATS /
# NORMALIZE roles (two blocks per tile, the second re-reading it from L2) were
# measured slower on every shape with the register kernels, e.g.
# (16, 512, 4000) fp32 fwd 0.43-0.45 vs 0.50, and removed.
CLN_GROUP_TILES = 256
CLN_STREAM_PPR = 0
CLN_STREAM_STAGES = 0
CLN_STREAM_LEAD = 0
CLN_STREAM_TMA = 0
# CLN_RESIDENT       0: the forward keeps a whole sequence in one block's shared
#                    memory (include/cln_resident.cuh) where it fits 96 KB and no
#                    CLN_STREAM_* knob is forced; 1: always (raises past ~200 KB);
#                    -1: never.
CLN_RESIDENT = 0
# CLN_PDL            1: each call's launches chained by programmatic dependent launch on
#                    sm_90+ (the workspace zeroed by a kernel instead of a memset; the zero
#                    kernel, the cLN kernel and the backward's column sums each launched as a
#                    dependent of the launch before it, every kernel waiting for that one
#                    before it reads anything, csrc/launch_util.h launch_ex); 0: plain
#                    launches and a memset.
CLN_PDL = 1
# CLN_PREFIX_SPIN    The cross-tile prefix waits' polls (include/cln_kernels.cuh, round_spin):
#                    1: each lane of the scan warp reloads all of its words not yet ready
#                    together, no sleep between polls; 0: each of its words in turn, 20 ns
#                    apart (before session 40).  Bitwise the same outputs.  Float accumulators
#                    only (fp32 / fp16 / bf16; fp64's flag words keep the word poll).  1: H200,
#                    two rounds (bench/gpu_s40.sh, NOTES 41), fwd+bwd 0.2-1.8 us faster at every
#                    target shape (bf16 (2, 128, 64000) 83.8 -> 82.0-82.2 us), the forward
#                    0-1.0 us faster except fp32 (4, 256, 16000) (45.3-45.5 -> 45.7-46.2).
#                    -1: no wait at all, the negative control of the test that compares the
#                    two (python -m bench.neg_prefix_spin; wrong outputs).
CLN_PREFIX_SPIN = 1
# CLN_FWD_SHIFT      1: the float32 forward's frame sums within a call's first C frames taken
#                    about a shift (each frame's first-channel value; include/cln_kernels.cuh,
#                    kShiftFrameSums), as Triton's CLN_FWD_SHIFT: under a DC offset of D
#                    standard deviations a plain float32 sum of C values loses D * 6e-8 *
#                    sqrt(C), which only the frames with little history carry ((4, 4096, 1)
#                    at offset 1000: 7.9e-4 against 2e-4 in the CPU emulator, 1.0e-5 shifted).
#                    0: off (the A/B of its cost; the test that it is needed).
CLN_FWD_SHIFT = 1
# RMS_BWD_STAGES     RMSNorm backward of fp32 / fp16 / bf16 rows of N <= 8192 (a
#                    multiple of 16 bytes): the row kernel (include/rmsnorm_kernels.cuh,
#                    rms_bwd_row_kernel) with 0: automatic (no ring: a ring of 2-3
#                    cp.async stages measured 0.71-0.74 vs 0.86-0.91 fwd+bwd without,
#                    bench/results/nvidia-h200-s6b-tune-rmsnorm-row.log);
#                    1-3: that many stages (1: no ring; raises where the row kernel does
#                    not apply); -1: the general kernel.
RMS_BWD_STAGES = 0

_lock = threading.Lock()
_modules: dict[tuple[int, int], ModuleType] = {}  # by compute capability
_by_device: dict[int, ModuleType] = {}  # by device index: the per-call fast path


def _unavailable(why: str) -> BackendUnavailableError:
    return BackendUnavailableError(f"cuda_ext backend unavailable: {why}")


def _source_files() -> list[Path]:
    files = [p for d in _INCLUDE_DIRS for p in d.iterdir() if p.suffix in {".cuh", ".h"}]
    files += [_HERE / s for s in _SOURCES]
    return sorted(set(files))


def _arch_flag(cap: tuple[int, int]) -> str:
    major, minor = cap
    return f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}"


def _module_name(cap: tuple[int, int]) -> str:
    h = hashlib.sha256()
    for f in _source_files():
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(repr((_CUDA_FLAGS, _CXX_FLAGS, _arch_flag(cap))).encode())
    h.update(f"{torch.__version__}|{torch.version.cuda}|{sys.version_info[:2]}".encode())
    return f"norm_cuda_ext_sm{cap[0]}{cap[1]}_{h.hexdigest()[:16]}"


def _check_toolchain() -> None:
    if torch.version.cuda is None:
        raise _unavailable(
            f"this PyTorch ({torch.__version__}) is a CPU-only build; install a CUDA build"
        )
    if not torch.cuda.is_available():
        raise _unavailable("no CUDA device is visible (check the driver / CUDA_VISIBLE_DEVICES)")
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME is None and shutil.which("nvcc") is None:
        raise _unavailable("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    try:
        from torch.utils.cpp_extension import verify_ninja_availability

        verify_ninja_availability()
    except RuntimeError as e:
        raise _unavailable("ninja is required to build it (pip install ninja)") from e


def _build_dir(name: str) -> Path:
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root is not None:
        path = Path(root) / name
    else:
        from torch.utils.cpp_extension import _get_build_directory

        path = Path(_get_build_directory(name, verbose=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def _build_lock(build_dir: Path) -> Iterator[None]:
    """An exclusive lock beside ``build_dir`` that dies with its process."""
    lock_path = build_dir.parent / f"{build_dir.name}.flock"
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            # Nobody else is inside torch's build while we hold the lock, so
            # a torch lock file here is an orphan of a killed build.
            (build_dir / "lock").unlink(missing_ok=True)
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _load(cap: tuple[int, int]) -> ModuleType:
    from torch.utils.cpp_extension import load

    name = _module_name(cap)
    build_dir = _build_dir(name)
    verbose = os.environ.get("CUDA_EXT_VERBOSE", "") not in ("", "0")
    with _build_lock(build_dir):
        try:
            return load(
                name=name,
                sources=[str(_HERE / s) for s in _SOURCES],
                extra_include_paths=[str(d) for d in _INCLUDE_DIRS],
                extra_cflags=list(_CXX_FLAGS),
                extra_cuda_cflags=[*_CUDA_FLAGS, _arch_flag(cap)],
                build_directory=str(build_dir),
                verbose=verbose,
            )
        except (RuntimeError, OSError) as e:
            raise RuntimeError(
                f"cuda_ext: building the extension {name} in {build_dir} failed "
                f"(set CUDA_EXT_VERBOSE=1 for the full compiler output): {e}"
            ) from e


def extension(device: torch.device | int | None = None) -> ModuleType:
    """The compiled extension for ``device``'s architecture (built on first use)."""
    _check_toolchain()
    cap = torch.cuda.get_device_capability(device)
    mod = _modules.get(cap)
    if mod is None:
        with _lock:
            mod = _modules.get(cap)
            if mod is None:
                mod = _load(cap)
                _modules[cap] = mod
    return mod


def _ext(x: Tensor) -> ModuleType:
    # Hot path: one dict lookup (the toolchain checks run once per device).
    mod = _by_device.get(x.device.index) if x.is_cuda else None
    if mod is None:
        if not x.is_cuda:
            raise _unavailable(f"it runs on CUDA tensors only (got one on {x.device})")
        mod = extension(x.device)
        _by_device[x.device.index] = mod
    return mod


# ---------------------------------------------------------------------------
# The raw-kernel contract (common/kernel_api.py)
# ---------------------------------------------------------------------------
def cln_forward(
    x: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    eps: float,
    state: ClnStateTuple | None,
    y: Tensor,
    mean: Tensor | None,
    rstd: Tensor | None,
    m2_last: Tensor,
    mean_last: Tensor | None = None,
) -> None:
    count0, mean0, m2_0 = state if state is not None else (None, None, None)
    _ext(x).cln_forward(
        x,
        gamma,
        beta,
        float(eps),
        count0,
        mean0,
        m2_0,
        y,
        mean,
        rstd,
        m2_last,
        CLN_GROUP_TILES,
        CLN_STREAM_PPR,
        CLN_STREAM_STAGES,
        CLN_STREAM_LEAD,
        CLN_RESIDENT,
        CLN_STREAM_TMA,
        CLN_PDL,
        CLN_PREFIX_SPIN,
        mean_last,
        CLN_FWD_SHIFT,
    )


def cln_backward(
    dy: Tensor,
    x: Tensor,
    gamma: Tensor | None,
    mean: Tensor,
    rstd: Tensor,
    count: Tensor | None,
    dx: Tensor,
    dgamma: Tensor | None,
    dbeta: Tensor | None,
) -> None:
    _ext(x).cln_backward(
        dy,
        x,
        gamma,
        mean,
        rstd,
        count,
        dx,
        dgamma,
        dbeta,
        CLN_GROUP_TILES,
        CLN_STREAM_PPR,
        CLN_STREAM_STAGES,
        CLN_STREAM_LEAD,
        CLN_STREAM_TMA,
        CLN_PDL,
        CLN_PREFIX_SPIN,
    )


@contextmanager
def cln_knobs(
    group_tiles: int | None = None,
    stream_ppr: int | None = None,
    stream_stages: int | None = None,
    stream_lead: int | None = None,
    resident: int | None = None,
    stream_tma: int | None = None,
    pdl: int | None = None,
    prefix_spin: int | None = None,
) -> Iterator[None]:
    """Set the cLN knobs ``CLN_GROUP_TILES``, ``CLN_STREAM_PPR``, ``CLN_STREAM_STAGES``,
    ``CLN_STREAM_LEAD``, ``CLN_RESIDENT``, ``CLN_STREAM_TMA``, ``CLN_PDL`` and
    ``CLN_PREFIX_SPIN`` for the calls inside the block.

    ``None`` keeps a knob as it is; the previous values come back on exit.  For a
    sweep on the GPU, e.g. ``with cln_knobs(group_tiles=512): t = time(...)``.
    Not thread-safe (module state).
    """
    want = {
        "CLN_GROUP_TILES": group_tiles,
        "CLN_STREAM_PPR": stream_ppr,
        "CLN_STREAM_STAGES": stream_stages,
        "CLN_STREAM_LEAD": stream_lead,
        "CLN_RESIDENT": resident,
        "CLN_STREAM_TMA": stream_tma,
        "CLN_PDL": pdl,
        "CLN_PREFIX_SPIN": prefix_spin,
    }
    module = globals()
    saved = {name: module[name] for name in want}
    module.update({name: int(v) for name, v in want.items() if v is not None})
    try:
        yield
    finally:
        module.update(saved)


def rmsnorm_forward(x: Tensor, weight: Tensor | None, eps: float, y: Tensor, rstd: Tensor) -> None:
    _ext(x).rmsnorm_forward(x, weight, float(eps), y, rstd)


def rmsnorm_backward(
    dy: Tensor, x: Tensor, weight: Tensor | None, rstd: Tensor, dx: Tensor, dw: Tensor | None
) -> None:
    _ext(x).rmsnorm_backward(dy, x, weight, rstd, dx, dw, RMS_BWD_STAGES)


# ---------------------------------------------------------------------------
# Self-test and quick benchmark (python -m backends.cuda_ext.kernels --selftest)
# ---------------------------------------------------------------------------
_TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2, torch.float64: 1e-12}


def _rel(out: Tensor, ref: Tensor) -> float:
    out64, ref64 = out.double(), ref.double()
    if not torch.isfinite(out64).all():
        return float("inf")
    den = ref64.norm().item()
    num = (out64 - ref64).norm().item()
    return num / den if den > 0 else num


def _poison(*shape: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


class _Report:
    def __init__(self) -> None:
        self.failed = 0
        self.total = 0

    def check(self, what: str, errs: dict[str, float], tol: float) -> None:
        self.total += 1
        bad = {k: v for k, v in errs.items() if not v <= tol}
        self.failed += bool(bad)
        cols = "  ".join(f"{k}={v:.2e}" for k, v in errs.items())
        print(f"{'FAIL' if bad else 'ok  '} {what:<58} {cols}  (tol {tol:.0e})", flush=True)


def _params(
    n: int, dtype: torch.dtype, kind: str, dev: torch.device, g: torch.Generator
) -> Tensor | None:
    if kind == "none":
        return None
    pdt = dtype if kind == "same" else acc_dtype(dtype)
    return (1 + 0.5 * torch.randn(n, generator=g, device=dev)).to(pdt)


def _selftest_cln(rep: _Report, dev: torch.device, g: torch.Generator) -> None:
    from common import eager

    # Every configuration of the launch tables (C up to 84, 140, 280, 560
    # and chunked beyond), odd T (scalar loads) and T % 8 == 0 (16-byte
    # loads), one tile and > 128 tiles (several batches of prefix words).
    shapes = [
        (80, 64, 301),
        (2, 3, 1),
        (1, 1, 7),
        (3, 130, 517),
        (2, 200, 256),
        (2, 300, 96),
        (1, 600, 203),
        (1, 8, 5003),
    ]
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        acc = acc_dtype(dtype)
        for i, (B, C, T) in enumerate(shapes):
            pkind = ("same", "acc", "none")[i % 3]
            dc = 1000.0 if (dtype == torch.float32 and i % 2 == 0) else 0.0
            x = (torch.randn(B, C, T, generator=g, device=dev) + dc).to(dtype)
            gamma = _params(C, dtype, pkind, dev, g)
            beta = _params(C, dtype, pkind, dev, g)
            # Float64 reference from the same (rounded) inputs.
            x64 = x.double()
            g64 = gamma.double() if gamma is not None else None
            b64 = beta.double() if beta is not None else None
            ry = torch.empty_like(x64)
            rm = torch.empty(B, T, dtype=torch.float64, device=dev)
            rr = torch.empty_like(rm)
            rM = torch.empty(B, dtype=torch.float64, device=dev)
            eager.cln_forward(x64, g64, b64, 1e-8, None, ry, rm, rr, rM)

            # Whole sequence, then the same sequence streamed in chunks.
            y = _poison(B, C, T, dtype=dtype, device=dev)
            mean = _poison(B, T, dtype=acc, device=dev)
            rstd = _poison(B, T, dtype=acc, device=dev)
            m2 = _poison(B, dtype=acc, device=dev)
            cln_forward(x, gamma, beta, 1e-8, None, y, mean, rstd, m2)
            tol = _TOL[dtype] * (20 if dc else 1)
            what = f"cln fwd {str(dtype)[6:]} {(B, C, T)} params={pkind} dc={dc:g}"
            errs = {"y": _rel(y, ry), "mean": _rel(mean, rm), "rstd": _rel(rstd, rr)}
            errs["m2"] = _rel(m2, rM)
            # G = 3: group links and group starts on the GPU (the default
            # G = 256 is one group for every shape here; short sequences
            # take the resident kernel by default, which has no groups).
            y3, mean3, rstd3 = torch.empty_like(y), torch.empty_like(mean), torch.empty_like(rstd)
            with cln_knobs(group_tiles=3, resident=-1):
                cln_forward(x, gamma, beta, 1e-8, None, y3, mean3, rstd3, torch.empty_like(m2))
            errs["y_G3"], errs["mean_G3"] = _rel(y3, ry), _rel(mean3, rm)
            rep.check(what, errs, tol)

            ys, ms, rs = [], [], []
            count = torch.zeros(B, dtype=torch.int64, device=dev)
            m0 = torch.zeros(B, dtype=acc, device=dev)
            M0 = torch.zeros(B, dtype=acc, device=dev)
            state: ClnStateTuple | None = None
            t0 = 0
            for step in (1, 7, 64, 1, 1000):
                t1 = min(T, t0 + step)
                if t1 <= t0:
                    break
                xc = x[:, :, t0:t1].contiguous()
                yc = _poison(B, C, t1 - t0, dtype=dtype, device=dev)
                mc = _poison(B, t1 - t0, dtype=acc, device=dev)
                rc = _poison(B, t1 - t0, dtype=acc, device=dev)
                M1 = _poison(B, dtype=acc, device=dev)
                cln_forward(xc, gamma, beta, 1e-8, state, yc, mc, rc, M1)
                ys.append(yc)
                ms.append(mc)
                rs.append(rc)
                count = count + C * (t1 - t0)
                m0, M0 = mc[:, -1].clone(), M1
                state = (count.clone(), m0, M0)
                t0 = t1
            if t0 == T:
                errs = {
                    "y": _rel(torch.cat(ys, 2), ry),
                    "mean": _rel(torch.cat(ms, 1), rm),
                    "rstd": _rel(torch.cat(rs, 1), rr),
                    "m2": _rel(M0, rM),
                }
                rep.check(what.replace("fwd", "stream"), errs, tol)

            # Backward, with a history (count) and without.
            dy = torch.randn(B, C, T, generator=g, device=dev).to(dtype)
            for with_count in (False, True):
                cnt = None
                mean_b, rstd_b = mean, rstd
                if with_count:
                    cnt = torch.full((B,), 5 * C, dtype=torch.int64, device=dev)
                    mean_b = mean + 0.1
                    rstd_b = rstd * 0.9
                rdx = torch.empty_like(x64)
                rdg = torch.empty(C, dtype=torch.float64, device=dev)
                rdb = torch.empty_like(rdg)
                eager.cln_backward(
                    dy.double(), x64, g64, mean_b.double(), rstd_b.double(), cnt, rdx, rdg, rdb
                )
                dx = _poison(B, C, T, dtype=dtype, device=dev)
                dg = _poison(C, dtype=acc, device=dev)
                db = _poison(C, dtype=acc, device=dev)
                cln_backward(dy, x, gamma, mean_b, rstd_b, cnt, dx, dg, db)
                dx3 = _poison(B, C, T, dtype=dtype, device=dev)
                with cln_knobs(group_tiles=3):
                    cln_backward(dy, x, gamma, mean_b, rstd_b, cnt, dx3, None, None)
                errs = {"dx": _rel(dx, rdx), "dgamma": _rel(dg, rdg), "dbeta": _rel(db, rdb)}
                errs["dx_G3"] = _rel(dx3, rdx)
                rep.check(
                    f"cln bwd {str(dtype)[6:]} {(B, C, T)} params={pkind} count={with_count}",
                    errs,
                    tol * 10,
                )


def _selftest_rms(rep: _Report, dev: torch.device, g: torch.Generator) -> None:
    from common import eager

    # (M, N, extra columns of row padding, column offset: unaligned rows)
    cases = [
        (1, 1, 0, 0),
        (7, 33, 0, 0),
        (100, 256, 0, 0),
        (64, 1000, 24, 0),
        (257, 4096, 0, 0),
        (33, 4096, 8, 1),
        (17, 8192, 0, 0),
        (9, 20000, 0, 0),
        (5, 40000, 16, 0),
        (3, 300000, 0, 0),
    ]
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        acc = acc_dtype(dtype)
        for i, (M, N, pad, off) in enumerate(cases):
            pkind = ("same", "acc", "none")[i % 3]
            base = torch.randn(M, N + pad + off, generator=g, device=dev).to(dtype)
            x = base[:, off : off + N]  # strided rows when pad or off > 0
            w = _params(N, dtype, pkind, dev, g)
            x64 = x.double()
            w64 = w.double() if w is not None else None
            ry = torch.empty(M, N, dtype=torch.float64, device=dev)
            rr = torch.empty(M, dtype=torch.float64, device=dev)
            eager.rmsnorm_forward(x64, w64, 1e-6, ry, rr)
            y = _poison(M, N, dtype=dtype, device=dev)
            r = _poison(M, dtype=acc, device=dev)
            rmsnorm_forward(x, w, 1e-6, y, r)
            tag = f"{str(dtype)[6:]} {(M, N)} ld={x.stride(0)} off={off} w={pkind}"
            rep.check(f"rms fwd {tag}", {"y": _rel(y, ry), "rstd": _rel(r, rr)}, _TOL[dtype])

            dy = torch.randn(M, N, generator=g, device=dev).to(dtype)
            rdx = torch.empty_like(ry)
            rdw = torch.empty(N, dtype=torch.float64, device=dev)
            eager.rmsnorm_backward(dy.double(), x64, w64, r.double(), rdx, rdw)
            dx = _poison(M, N, dtype=dtype, device=dev)
            dw = _poison(N, dtype=acc, device=dev)
            rmsnorm_backward(dy, x, w, r, dx, dw)
            dw2 = _poison(N, dtype=acc, device=dev)
            rmsnorm_backward(dy, x, w, r, dx.clone(), dw2)
            errs = {"dx": _rel(dx, rdx), "dw": _rel(dw, rdw)}
            errs["dw_repro"] = 0.0 if torch.equal(dw, dw2) else float("inf")
            rep.check(f"rms bwd {tag}", errs, _TOL[dtype] * 10)


def selftest(device: torch.device | None = None) -> bool:
    """Compare all four functions with the float64 eager reference; print a table."""
    dev = device or torch.device("cuda", torch.cuda.current_device())
    g = torch.Generator(device=dev).manual_seed(1234)
    rep = _Report()
    _selftest_cln(rep, dev, g)
    _selftest_rms(rep, dev, g)
    torch.cuda.synchronize(dev)
    print(f"{rep.total - rep.failed} passed, {rep.failed} failed")
    return rep.failed == 0


def _time_ms(fn: Callable[[], None], reps: int = 50) -> float:
    for _ in range(5):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends, strict=True):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))[reps // 2]


def bench(device: torch.device | None = None) -> None:
    """Achieved bandwidth of the target shapes as a fraction of copy bandwidth."""
    dev = device or torch.device("cuda", torch.cuda.current_device())
    src = torch.empty(1 << 28, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    copy_bw = 2 * src.numel() / (_time_ms(lambda: dst.copy_(src)) * 1e-3)
    print(f"copy bandwidth {copy_bw / 1e9:.0f} GB/s")

    def line(what: str, nbytes: float, ms: float) -> None:
        bw = nbytes / (ms * 1e-3)
        print(f"{what:<44} {ms * 1e3:9.1f} us {bw / 1e9:7.0f} GB/s {bw / copy_bw:6.3f}")

    print(
        f"cLN knobs: CLN_GROUP_TILES={CLN_GROUP_TILES} CLN_STREAM_PPR={CLN_STREAM_PPR} "
        f"CLN_STREAM_STAGES={CLN_STREAM_STAGES} CLN_STREAM_LEAD={CLN_STREAM_LEAD} "
        f"CLN_STREAM_TMA={CLN_STREAM_TMA} CLN_PDL={CLN_PDL} CLN_PREFIX_SPIN={CLN_PREFIX_SPIN}"
    )
    for dtype in (torch.float32, torch.bfloat16):
        acc = acc_dtype(dtype)
        for B, C, T in ((16, 512, 4000), (4, 256, 16000), (2, 128, 64000), (80, 64, 301)):
            x = torch.randn(B, C, T, device=dev).to(dtype)
            gm = torch.ones(C, device=dev, dtype=dtype)
            y, dx, dy = torch.empty_like(x), torch.empty_like(x), torch.randn_like(x)
            mean = torch.empty(B, T, device=dev, dtype=acc)
            rstd, m2 = torch.empty_like(mean), torch.empty(B, device=dev, dtype=acc)
            dg, db = torch.empty(C, device=dev, dtype=acc), torch.empty(C, device=dev, dtype=acc)
            size = x.numel() * x.element_size()
            tf = _time_ms(lambda: cln_forward(x, gm, gm, 1e-8, None, y, mean, rstd, m2))  # noqa: B023
            tb = _time_ms(lambda: cln_backward(dy, x, gm, mean, rstd, None, dx, dg, db))  # noqa: B023
            tag = f"cln {str(dtype)[6:]} {(B, C, T)}"
            line(f"{tag} fwd", 2 * size, tf)
            line(f"{tag} bwd", 3 * size, tb)
            line(f"{tag} fwd+bwd", 5 * size, tf + tb)
        for M, N in ((32768, 4096), (16384, 8192), (2048, 4096)):
            x = torch.randn(M, N, device=dev).to(dtype)
            w = torch.ones(N, device=dev, dtype=dtype)
            y, dx, dy = torch.empty_like(x), torch.empty_like(x), torch.randn_like(x)
            r = torch.empty(M, device=dev, dtype=acc)
            dw = torch.empty(N, device=dev, dtype=acc)
            size = x.numel() * x.element_size()
            tf = _time_ms(lambda: rmsnorm_forward(x, w, 1e-6, y, r))  # noqa: B023
            tb = _time_ms(lambda: rmsnorm_backward(dy, x, w, r, dx, dw))  # noqa: B023
            tr = _time_ms(lambda: torch.nn.functional.rms_norm(x, (N,), w, 1e-6))  # noqa: B023
            tag = f"rms {str(dtype)[6:]} {(M, N)}"
            line(f"{tag} fwd", 2 * size, tf)
            line(f"{tag} F.rms_norm fwd", 2 * size, tr)
            line(f"{tag} bwd", 3 * size, tb)
            line(f"{tag} fwd+bwd", 5 * size, tf + tb)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selftest", action="store_true", help="compare with common.eager")
    ap.add_argument("--bench", action="store_true", help="bandwidth of the target shapes")
    args = ap.parse_args(argv)
    if not (args.selftest or args.bench):
        ap.print_help()
        return 2
    try:
        extension()  # build (or load) first, so that errors come before any output
    except BackendUnavailableError as e:
        print(e, file=sys.stderr)
        return 2
    ok = True
    if args.selftest:
        ok = selftest()
    if args.bench:
        bench()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
