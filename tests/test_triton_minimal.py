"""The teaching-size Triton cLN (``backends/triton_minimal``) at its corners, forced by its
knobs at small shapes: many tiles per sequence, the carry loop over several blocks of tiles,
several channel blocks per tile. The shared harness (``--backend triton_minimal``) covers
the rest; here the knobs make small shapes reach what only large ones would."""

from __future__ import annotations

import pytest
import torch

import common
from common.registry import select_backend
from tests import harness

NAME = "triton_minimal"

CORNERS = {
    # 4 frames a tile, 3 tiles a carry step, 2 channels a block: (2, 5, 61) has 16 tiles per
    # sequence in 6 carry steps, each tile 3 channel blocks (the last one partial).
    "small": {"TILE_T": 4, "BLOCK_C_MAX": 2, "CARRY_BLOCK": 4},
    "one-frame-tiles": {"TILE_T": 1, "BLOCK_C_MAX": 4, "CARRY_BLOCK": 2},
}


@pytest.fixture
def kernels():
    spec = common.get_backend(NAME)
    if not spec.available():
        pytest.skip(f"{NAME}: {spec.unavailable_reason()}")
    return spec.kernels()


@pytest.fixture
def tdevice() -> torch.device:
    return harness.backend_device(NAME)


@pytest.mark.parametrize("corner", list(CORNERS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_corners(kernels, tdevice, monkeypatch, corner, dtype):
    for k, v in CORNERS[corner].items():
        monkeypatch.setattr(kernels, k, v)
    shape = (2, 5, 61)
    harness.check_cln_forward(NAME, tdevice, shape, dtype, dc=3.0)
    harness.check_cln_backward(NAME, tdevice, shape, dtype, dc=3.0, history_frames=7)
    harness.check_cln_streaming(NAME, tdevice, shape, dtype, dc=3.0)


def test_never_chosen_automatically(tdevice):
    """A teaching backend is asked for by name, never picked as the best available."""
    assert not common.get_backend(NAME).automatic
    x = torch.randn(1, 2, 3, device=tdevice)
    assert select_backend(None, "cln_fwd", x.dtype, x.device).name != NAME
    assert select_backend(NAME, "cln_fwd", x.dtype, x.device).name == NAME


def _specs() -> list[tuple[str, dict[str, int], dict[str, object], str]]:
    """Every kernel of the backend, as the GPU launcher specializes it: all sizes 1 (Triton makes
    them compile-time constants) and a target shape, fp32 and bf16, every flag on and off."""
    sizes = [
        {"C": 1, "T": 1, "NT": 1, "BT_ALL": 1},
        {"C": 512, "T": 4000, "NT": 32, "BT_ALL": 64000},
    ]
    flags = {
        "_tile_stats": [{}],
        "_carry": [{"HAS_STATE": s} for s in (True, False)],
        "_normalize": [
            {"HAS_GAMMA": f, "HAS_BETA": f, "STATS": not f, "HAS_MLAST": f} for f in (True, False)
        ],
        "_bwd_frame_sums": [
            {"HAS_GAMMA": f, "HAS_COUNT": f, "HAS_DG": f, "HAS_DB": not f} for f in (True, False)
        ],
        "_suffix_carry": [{}],
        "_bwd_dx": [{"HAS_GAMMA": f} for f in (True, False)],
    }
    out = []
    for kernel, variants in flags.items():
        for size in sizes:
            block = {"BLOCK_C": 1 if size["C"] == 1 else 32, "BT": 1 if size["T"] == 1 else 128}
            if kernel in ("_carry", "_suffix_carry"):
                block = {"BLOCK": 256}
            for v in variants:
                for dtype in ("fp32", "bf16"):
                    out.append((kernel, size, {**v, **block}, dtype))
    return out


def test_kernels_compile_for_sm90():
    """Each kernel compiled ahead of time for sm_90 with the GPU's specializations (Triton's own
    ptxas, no GPU; ``tests/test_triton_compile.py``'s method), all in one subprocess: the
    interpreter runs code that the compiler refuses (a size of 1 made a constant, a loop-carried
    value whose type changes)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("triton")
    code = (
        "import inspect\n"
        "from backends.triton_minimal import kernels as K\n"
        "from tests.test_triton_compile import compile_for_sm90\n"
        f"for name, size, const, dtype in {_specs()!r}:\n"
        "    fn = getattr(K, name)\n"
        "    params = set(inspect.signature(fn.fn).parameters)\n"
        "    ints = {k: v for k, v in size.items() if k in params}\n"
        "    compile_for_sm90(fn, ints, const, K.NUM_WARPS, dtype)\n"
        "print('COMPILED')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )
    err = proc.stderr.strip().splitlines()
    if proc.returncode != 0 and any("ptxas" in ln and "not found" in ln for ln in err):
        pytest.skip("no ptxas for sm_90 in this Triton")
    assert proc.returncode == 0 and "COMPILED" in proc.stdout, "\n".join(err[-25:])
