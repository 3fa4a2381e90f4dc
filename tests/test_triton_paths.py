"""The Triton cLN kernels' schedules, each forced at small shapes.

The launch rules pick a schedule by size (``backends.triton.kernels``): split
STATS/NORMALIZE roles with a window of D tiles (large tensors), one program per
tile with a fixed-order prefix (small tensors), the look-back (sequences longer
than ``CLN_DIRECT_MAX_TILES`` tiles), and channel blocks (C past
``CLN_MAX_BLOCK_C``).  The shared harness only reaches the ones its shapes
select, so here each is forced by setting the module's knobs (read at call
time, part of every config key) and checked with the same harness functions.
Runs on the GPU and under the interpreter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import torch

import common
from tests import harness

SCHEDULES = {
    # window 1: NORMALIZE(g) comes right after STATS(g); 3: an odd window; 10**6: every STATS
    # first (D = all tiles).
    "split-w1": {"CLN_SPLIT_MIN_BYTES": 0, "CLN_L2_WINDOW_BYTES": 1},
    "split-w3": {"CLN_SPLIT_MIN_BYTES": 0, "CLN_L2_WINDOW_BYTES": "3 tiles"},
    "split-all": {"CLN_SPLIT_MIN_BYTES": 0, "CLN_L2_WINDOW_BYTES": 1 << 40},
    "single": {"CLN_SPLIT_MIN_BYTES": 1 << 40},
    "lookback": {"CLN_DIRECT_MAX_TILES": 0},
    "channel-blocks-split": {
        "CLN_MAX_BLOCK_C": 8,
        "CLN_LOOP_BLOCK_C": 8,
        "CLN_SPLIT_MIN_BYTES": 0,
        "CLN_L2_WINDOW_BYTES": "3 tiles",
    },
    "channel-blocks-single": {
        "CLN_MAX_BLOCK_C": 8,
        "CLN_LOOP_BLOCK_C": 8,
        "CLN_SPLIT_MIN_BYTES": 1 << 40,
    },
}


@pytest.fixture(scope="module")
def tdevice() -> torch.device:
    spec = common.get_backend("triton")
    reason = spec.unavailable_reason()
    if reason is not None:
        pytest.skip(f"triton cannot run here: {reason}")
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def plan_itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


@contextlib.contextmanager
def schedule(
    name: str, shape: tuple[int, int, int], dtype: torch.dtype, device: torch.device
) -> Iterator[None]:
    from backends.triton import kernels as K

    knobs = dict(SCHEDULES[name])
    # Small tiles, so that these shapes span many tiles per sequence.
    knobs.setdefault("CLN_FWD_TILE", 128)
    knobs.setdefault("CLN_BWD_TILE", 128)
    knobs.setdefault("CLN_MIN_ROW_BYTES", 8)
    window3 = knobs.get("CLN_L2_WINDOW_BYTES") == "3 tiles"
    if window3:
        knobs["CLN_L2_WINDOW_BYTES"] = 1  # set below, once the tile size is known
    old = {k: getattr(K, k) for k in knobs}
    for k, v in knobs.items():
        setattr(K, k, v)
    if window3:
        # D = window bytes // tile bytes: three forward tiles (the backward's tiles, x and dy,
        # are larger: a window of one or two of them).
        plan = K._cln_plan(torch.empty(shape, dtype=dtype, device=device), forward=True)
        K.CLN_L2_WINDOW_BYTES = 3 * plan.block_c * plan.num_cb * plan.bt * plan_itemsize(dtype)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(K, k, v)


@pytest.mark.parametrize("name", list(SCHEDULES))
@pytest.mark.parametrize("shape", [(3, 5, 67), (1, 20, 130)], ids=str)
def test_schedule_forward_backward(tdevice, name, shape):
    with schedule(name, shape, torch.float32, tdevice):
        harness.check_cln_forward("triton", tdevice, shape, torch.float32, True)
        harness.check_cln_backward("triton", tdevice, shape, torch.float32, True)


@pytest.mark.parametrize("name", ["split-w3", "single", "lookback", "channel-blocks-split"])
def test_schedule_state_and_bf16(tdevice, name):
    shape = (2, 12, 90)
    with schedule(name, shape, torch.bfloat16, tdevice):
        harness.check_cln_streaming("triton", tdevice, shape, torch.bfloat16)
        harness.check_cln_backward(
            "triton", tdevice, (2, 6, 41), torch.float32, True, history_frames=29
        )


@pytest.mark.parametrize("name", ["split-w1", "split-w3", "single", "channel-blocks-split"])
def test_schedule_causal(tdevice, name):
    shape = (2, 9, 60)
    with schedule(name, shape, torch.float32, tdevice):
        harness.check_cln_causal("triton", tdevice, shape, torch.float32)
