"""The Triton cLN kernels compile for sm_90 the way the GPU launcher specializes them.

On the GPU, Triton turns integer arguments equal to 1 into compile-time
constants (and marks multiples of 16); the interpreter does neither, so code
such as ``(C * BT).to(tl.float32)`` runs in CI and fails to compile on the GPU
when C == 1.  Here the kernels are compiled ahead of time for sm_90 (Triton's
own ptxas, no GPU needed) with those specializations, in a subprocess:
conftest turns the interpreter on for this process, and interpreted kernels
cannot be compiled.  Skipped when the installed Triton has no NVIDIA backend.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest

pytest.importorskip("triton")


def compile_for_sm90(
    fn, ints: dict[str, int], const: dict[str, object], num_warps: int, dtype: str = "fp32"
) -> int:
    """Compile ``fn`` (a JITFunction) for sm_90 as the GPU launcher would specialize it;
    returns the shared memory it needs (bytes)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    params = list(inspect.signature(fn.fn).parameters)
    sig: dict[str, str] = {}
    attrs = {}
    for i, p in enumerate(params):
        if p in const or ints.get(p) == 1:
            sig[p] = "constexpr"
        elif p in ("scr_ptr", "cnt_ptr", "tl_ptr"):
            sig[p] = "*i64"
        elif p in ("x_ptr", "y_ptr", "dy_ptr", "dx_ptr", "w_ptr"):
            sig[p] = f"*{dtype}"
        elif p.endswith("_ptr"):
            sig[p] = "*fp32"
        elif p == "eps":
            sig[p] = "fp32"
        else:
            sig[p] = "i32"
        if sig[p].startswith("*") or (p in ints and ints[p] % 16 == 0):
            attrs[(i,)] = [["tt.divisibility", 16]]
    constexprs = {(params.index(k),): v for k, v in const.items()}
    constexprs.update({(params.index(k),): 1 for k, v in ints.items() if v == 1})
    src = ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
    stages = const.get("NUM_STAGES", 3)
    options = {"num_warps": num_warps, "num_stages": stages}
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    return int(kernel.metadata.shared)


def _compile(
    kernel: str, ints: dict[str, int], const: dict[str, object], num_warps: int, dtype: str = "fp32"
) -> int:
    code = (
        "from backends.triton import kernels as K\n"
        "from tests.test_triton_compile import compile_for_sm90\n"
        f"print('SHARED', compile_for_sm90(K.{kernel}, {ints!r}, {const!r}, {num_warps}, "
        f"{dtype!r}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        if any("ptxas" in line and "not found" in line for line in err):
            pytest.skip("no ptxas for sm_90 in this Triton")
        raise AssertionError(f"{kernel} failed to compile for sm_90:\n" + "\n".join(err[-25:]))
    return int(proc.stdout.split("SHARED")[-1].split()[0])


SIZES = [
    {"B": 1, "C": 1, "T": 1, "NTB": 1, "NG": 1},  # every size specialized to 1
    {"B": 16, "C": 512, "T": 4000, "NTB": 250, "NG": 2},  # a target shape
]


FWD_FLAGS = {"HAS_STATE": True, "HAS_GAMMA": True, "HAS_BETA": True}
BWD_FLAGS = {"HAS_COUNT": True, "HAS_GAMMA": True, "HAS_DG": True, "HAS_DB": True}


KERNELS = [("_cln_fwd_kernel", FWD_FLAGS), ("_cln_bwd_kernel", BWD_FLAGS)]


def _direction_knobs(kernel: str) -> dict[str, object]:
    """The constexprs only one direction's kernel takes, at their launch defaults; both with
    their first wave staggered (``CLN_FWD_STAGGER_NS``, ``CLN_BWD_STAGGER_NS``, on by default),
    their programmatic dependent launch (``CLN_PDL``, on by default on sm_90) and their
    diagnostic timelines (``_DIAG_TIMELINE``, ``_DIAG_TIMELINE_BWD``) compiled in; the forward
    with its wait before its first load (``CLN_PDL_EARLY``), the backward with it after."""
    # CLN_TILE_EVICT, CLN_OUT_CACHE: none by default
    # CLN_FWD_AFFINE_EARLY, CLN_BWD_AFFINE_EARLY, CLN_SPIN_SLEEP_NS, CLN_SPIN_NEAREST (both
    # directions), CLN_FWD_PACE_GBPS(_32BIT), CLN_FWD_PREFETCH, CLN_FWD_FAST_DIV: off by default
    # (test_cln_forward_compiles_paced compiles the pace);
    # CLN_FWD_EVEN, CLN_FWD_OUT_FMA_16BIT, CLN_PACK_ASM: on where they apply (a full tile, a
    # packed 16-bit tile on the GPU), off here; test_cln_kernels_compile_spin compiles them on.
    # (A constexpr left out here would be compiled as a runtime argument, both sides of its
    # branches in the kernel.)
    hints = {
        "LD_EV": "",
        "ST_CM": "",
        "WAIT_FIRST": kernel == "_cln_fwd_kernel",
        "AFFINE_EARLY": False,
        "SPIN": 0,
        "NEAREST": False,
    }
    if kernel == "_cln_fwd_kernel":
        fwd = {"PACE": False, "PREFETCH": False, "EVEN": False, "OUT_FMA": False}
        # CLN_FWD_PREFIX_MERGED: on where a sequence has several groups (G == CHUNK);
        # test_cln_forward_compiles_unmerged compiles it off.
        # CLN_FWD_THREAD_SPIN (TSPIN, on by default on the GPU): off here, compiled on by
        # test_cln_forward_compiles_thread_spin.
        fwd.update(PACK=False, FAST_DIV=False, MERGED=True, TSPIN=0)
        # With its per-frame statistics stored, as a forward a backward follows; the forward
        # alone (STATS=False) is compiled by test_cln_forward_compiles_alone / _paced.
        fwd.update(STATS=True, HAS_MLAST=True)
        return {"ABLATE": 0, "TIMELINE": True, "STAGGER": True, "GDC": True, **fwd, **hints}
    # CLN_BWD_DX_FMA_16BIT, CLN_BWD_SHARE_16BIT, CLN_BWD_FAST_DIV: on where they apply (a packed
    # 16-bit tile; the division on the GPU), off here; test_cln_kernels_compile_spin compiles
    # them on.
    bwd = {"DX_FMA": False, "SHARE": False, "FAST_DIV": False}
    return {
        **hints,
        **bwd,
        "PACK": False,
        "GDC": True,
        "OVERLAP": True,
        "FUSE": True,
        "LATE": 2,
        "ABLATE": 0,
        "TIMELINE": True,
        "STAGGER": True,
    }


@pytest.mark.parametrize("ints", SIZES, ids=["ones", "target"])
@pytest.mark.parametrize("kernel, flags", KERNELS, ids=["fwd", "bwd"])
def test_cln_kernels_compile(kernel, flags, ints):
    one = ints["C"] == 1
    # The target shape's fp32 tiles: 512 x 32 in both directions (the forward's wide rows,
    # the backward's 128-byte minimum row).
    tile = dict(BLOCK_C=2 if one else 512, BT=2 if one else 32, NUM_CB=1, SCR_OFF=16)
    # Tickets in runs from the atomic counter here, by program id in the packed test below.
    prefix = dict(G=128, CHUNK=128, RUN=4, TICKET_ATOMIC=True, PAIRS=0, ASM=False)
    const = {**flags, **tile, **prefix, **_direction_knobs(kernel)}
    _compile(kernel, ints, const, num_warps=4)


@pytest.mark.parametrize("dtype, pairs", [("bf16", 1), ("fp16", 2)])
@pytest.mark.parametrize("kernel, flags", KERNELS, ids=["fwd", "bwd"])
def test_cln_kernels_compile_pairs(kernel, flags, dtype, pairs):
    """The packed 16-bit tiles with their inline PTX (GPU only: the interpreter runs the same
    code without it, ``ASM=False``) at a target shape's tile."""
    ints = {"B": 2, "C": 128, "T": 64000, "NTB": 1000, "NG": 8}
    tile = dict(BLOCK_C=128, BT=64, NUM_CB=1, SCR_OFF=16)
    const = {**flags, **tile, "G": 128, "CHUNK": 128, "RUN": 1, "PAIRS": pairs, "ASM": True}
    const["TICKET_ATOMIC"] = False
    const.update(_direction_knobs(kernel))
    # With the cache hints of the tiles and outputs (``CLN_TILE_EVICT``, ``CLN_OUT_CACHE``).
    const.update(LD_EV="evict_first", ST_CM=".cs")
    _compile(kernel, ints, const, num_warps=2 if kernel == "_cln_fwd_kernel" else 4, dtype=dtype)


@pytest.mark.parametrize("kernel, flags", KERNELS, ids=["fwd", "bwd"])
def test_cln_kernels_compile_affine_early(kernel, flags):
    """The affine parameters read before the prefix / suffix wait (``CLN_FWD_AFFINE_EARLY``,
    ``CLN_BWD_AFFINE_EARLY``, off by default) at a target shape's fp32 tile."""
    ints = {"B": 4, "C": 256, "T": 16000, "NTB": 500, "NG": 4}
    tile = dict(BLOCK_C=256, BT=32, NUM_CB=1, SCR_OFF=16)
    const = {**flags, **tile, "G": 128, "CHUNK": 128, "RUN": 1, "PAIRS": 0, "ASM": False}
    const["TICKET_ATOMIC"] = False
    const.update(_direction_knobs(kernel), AFFINE_EARLY=True)
    _compile(kernel, ints, const, num_warps=4)


def _compile_target_fwd(dtype: str, pairs: int, more_ints: dict | None = None, **knobs) -> None:
    """Compile the forward at a target shape's tile, (2, 128, 64000): 128 x 64, 8 groups per
    sequence, tiles by program id, 2 warps for packed 16-bit tiles and 4 otherwise, with
    ``knobs`` over the launch defaults of ``_direction_knobs``."""
    ints = {"B": 2, "C": 128, "T": 64000, "NTB": 1000, "NG": 8, **(more_ints or {})}
    tile = dict(BLOCK_C=128, BT=64, NUM_CB=1, SCR_OFF=16)
    const = {**FWD_FLAGS, **tile, "G": 128, "CHUNK": 128, "RUN": 1, "PAIRS": pairs, "ASM": True}
    const["TICKET_ATOMIC"] = False
    const.update(_direction_knobs("_cln_fwd_kernel"), **knobs)
    _compile("_cln_fwd_kernel", ints, const, num_warps=2 if pairs else 4, dtype=dtype)


@pytest.mark.parametrize("early", [False, True], ids=["affine-late", "affine-early"])
@pytest.mark.parametrize("dtype, pairs", [("fp32", 0), ("bf16", 1)])
def test_cln_forward_compiles_paced(dtype, pairs, early):
    """The forward with its loads paced from the zero kernel's stamp at a target shape's tile:
    as a float32 forward no backward follows is by default (``CLN_FWD_ALONE_PACE_GBPS_32BIT``,
    no per-frame statistics stored), and as ``CLN_FWD_PACE_GBPS`` would pace bf16; with gamma /
    beta read before the prefix wait too (``CLN_FWD_ALONE_AFFINE_EARLY``, on by default)."""
    pace = {"pace_ps": 7661, "stamp_idx": 2032}
    _compile_target_fwd(
        dtype, pairs, pace, STAGGER=False, PACE=True, STATS=False, AFFINE_EARLY=early
    )


@pytest.mark.parametrize("dtype, pairs", [("fp32", 0), ("bf16", 1)])
def test_cln_forward_compiles_alone(dtype, pairs):
    """The forward no backward follows, staggered (bf16's default; fp32 with its pace off):
    no per-frame statistics stored, the last frame's mean for the state."""
    _compile_target_fwd(dtype, pairs, STATS=False)


@pytest.mark.parametrize("dtype, pairs", [("bf16", 1), ("fp16", 2)])
@pytest.mark.parametrize("kernel, flags", KERNELS, ids=["fwd", "bwd"])
def test_cln_kernels_compile_spin(kernel, flags, dtype, pairs):
    """The polls with a nanosleep between them and the nearest earlier tile's word first
    (``CLN_SPIN_SLEEP_NS``, ``CLN_SPIN_NEAREST``, off by default; the sleep is inline PTX) at a
    target shape's packed 16-bit tile, with the other inline-PTX knobs on (each 16-bit kind's
    paired conversion, ``CLN_PACK_ASM``; both directions' ``div.approx``) and the other
    knobs that cut instructions per value on."""
    ints = {"B": 2, "C": 128, "T": 64000, "NTB": 1000, "NG": 8}
    tile = dict(BLOCK_C=128, BT=64, NUM_CB=1, SCR_OFF=16)
    const = {**flags, **tile, "G": 128, "CHUNK": 128, "RUN": 1, "PAIRS": pairs, "ASM": True}
    const["TICKET_ATOMIC"] = False
    const.update(_direction_knobs(kernel), SPIN=250, NEAREST=True)
    if kernel == "_cln_fwd_kernel":
        # and the forward's tiles without padding, its 16-bit output as one FMA, its divisions
        # by div.approx.f32
        const.update(EVEN=True, OUT_FMA=True, FAST_DIV=True)
    else:
        # and the backward's dx by FMAs, its unpackings shared, its divisions by div.approx.f32
        const.update(DX_FMA=True, SHARE=True, FAST_DIV=True)
    const["PACK"] = True  # the 16-bit outputs packed by paired conversions
    _compile(kernel, ints, const, num_warps=2 if kernel == "_cln_fwd_kernel" else 4, dtype=dtype)


@pytest.mark.parametrize("dtype, pairs", [("fp32", 0), ("bf16", 1)])
def test_cln_forward_compiles_unmerged(dtype, pairs):
    """The forward's prefix in two waits and two folds (``CLN_FWD_PREFIX_MERGED`` off) at a
    target shape's tile (8 groups per sequence)."""
    _compile_target_fwd(dtype, pairs, MERGED=False)


@pytest.mark.parametrize(
    "dtype, pairs, merged", [("fp32", 0, False), ("bf16", 1, True)], ids=["fp32-unmerged", "bf16"]
)
def test_cln_forward_compiles_thread_spin(dtype, pairs, merged):
    """The forward's waits polled per thread (``CLN_FWD_THREAD_SPIN``, on by default; its
    inline PTX loops) at a target shape's tile (8 groups per sequence): fp32 over 4 warps with
    the prefix in two folds (1 word per thread in every wait), bf16 over 2 warps with the
    merged prefix (4 words per thread in the merged vector, 2 in the closing tile's)."""
    threads = 32 * (2 if pairs else 4)  # _compile_target_fwd's warps
    _compile_target_fwd(dtype, pairs, MERGED=merged, TSPIN=threads)


@pytest.mark.parametrize("dtype, pairs", [("fp32", 0), ("bf16", 1)])
def test_cln_forward_compiles_prefetching(dtype, pairs):
    """The forward whose programs prefetch a later tile's rows into the L2 (``CLN_FWD_PREFETCH``,
    off by default; its inline ``cp.async.bulk.prefetch``) at a target shape's tile."""
    _compile_target_fwd(dtype, pairs, {"prefetch_tiles": 264}, PREFETCH=True)


@pytest.mark.parametrize(
    "kernel", ["_zero_kernel", "_zero_kernel early", "_zero_kernel early stamp", "_colsum_kernel"]
)
def test_pdl_helpers_compile(kernel):
    """The scratch zeroing (its wait before or after its trigger, ``CLN_PDL_EARLY``; with the
    start-time stamp of ``CLN_FWD_PACE_GBPS``) and the column sums with their
    ``griddepcontrol`` instructions (``CLN_PDL``), which only the GPU runs."""
    if kernel.startswith("_zero_kernel"):
        const = {"BLOCK": 1024, "EARLY": "early" in kernel, "STAMP": kernel.endswith("stamp")}
        _compile("_zero_kernel", {"n": 4016}, const, num_warps=4)
    else:
        ints = {"K": 1000, "W": 512, "SPLIT": 256, "seg": 64, "ldo": 512}
        _compile(kernel, ints, {"BLOCK_R": 64, "BLOCK_W": 128, "GDC": True}, num_warps=4)


# sm_90: at most 227 KiB of shared memory per block.
SM90_SMEM = 227 * 1024


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_rmsnorm_backward_pipeline_fits_shared_memory(dtype):
    """The widest single-pass backward row (RMS_BWD_MAX_BLOCK_N) at the stage count the
    launcher uses for that dtype must fit an SM's shared memory."""
    import importlib

    K = importlib.import_module("backends.triton.kernels")  # the constants only
    n = K.RMS_BWD_MAX_BLOCK_N
    stages = K.RMS_BWD_STAGES_16BIT if dtype == "bf16" else K.RMS_BWD_STAGES
    const = dict(HAS_W=True, HAS_DW=True, HAS_C=False, ROWS=1, BLOCK_N=n, NUM_STAGES=stages)
    ints = {"M": 4096, "N": n, "stride_x": n, "rows_per_prog": 32}
    shared = _compile("_rms_bwd_kernel", ints, const, num_warps=16, dtype=dtype)
    assert 0 < shared <= SM90_SMEM, f"{dtype} N={n} stages={stages}: {shared} B of shared memory"
