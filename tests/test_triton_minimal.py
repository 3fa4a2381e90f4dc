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
