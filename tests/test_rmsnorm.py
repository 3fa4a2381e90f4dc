"""RMSNorm: every backend against the float64 oracle (values and gradients)."""

from __future__ import annotations

import pytest
import torch

import common
from common.reference import rmsnorm_oracle, rmsnorm_reference
from common.testing import assert_close, tolerance
from tests import harness
from tests.harness import skip_unsupported as _skip_unsupported

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
SHAPES = [(1, 1), (7, 33), (4, 3, 128), (5, 1000), (2, 4096)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("weight", [True, False], ids=["weight", "noweight"])
def test_forward(backend, device, shape, dtype, weight):
    _skip_unsupported(backend, dtype, device, "rmsnorm_fwd")
    harness.check_rmsnorm_forward(backend, device, shape, dtype, weight)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("weight", [True, False], ids=["weight", "noweight"])
def test_backward(backend, device, shape, dtype, weight):
    _skip_unsupported(backend, dtype, device, "rmsnorm_bwd")
    harness.check_rmsnorm_backward(backend, device, shape, dtype, weight)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(6, 100), (3, 2, 513)], ids=str)
def test_strided_rows(backend, device, shape, dtype):
    _skip_unsupported(backend, dtype, device, "rmsnorm_fwd")
    harness.check_rmsnorm_forward(backend, device, shape, dtype, True, strided=True)
    harness.check_rmsnorm_backward(backend, device, shape, dtype, True, strided=True)


def test_weight_float32_with_bf16_input(backend, device):
    _skip_unsupported(backend, torch.bfloat16, device, "rmsnorm_fwd")
    harness.check_rmsnorm_forward(
        backend, device, (5, 96), torch.bfloat16, True, weight_dtype=torch.float32
    )


@pytest.mark.parametrize("n", [70_000, 262_144], ids=lambda n: f"N{n}")
def test_very_long_rows(backend, device, n):
    """Rows longer than one block: the looped path."""
    _skip_unsupported(backend, torch.float32, device, "rmsnorm_fwd")
    harness.check_rmsnorm_forward(backend, device, (2, n), torch.float32, True)
    harness.check_rmsnorm_backward(backend, device, (3, n), torch.float32, True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(4096, 4096), (65536, 128), (3, 17, 8192)], ids=str)
def test_large_shapes_gpu(backend, device, shape, dtype):
    if device.type != "cuda":
        pytest.skip("large shapes run on the GPU only")
    _skip_unsupported(backend, dtype, device, "rmsnorm_fwd")
    g, seed = harness.new_generator()
    x = harness.randn(shape, dtype, device, g).requires_grad_(True)
    w = (1 + 0.5 * harness.randn((shape[-1],), dtype, device, g)).requires_grad_(True)
    y = common.rmsnorm(x, w, backend=backend)
    tol = tolerance(dtype, shape[-1])
    assert_close(
        f"rmsnorm large [{backend} {shape} {dtype} seed={seed}]", y, rmsnorm_reference(x, w), tol
    )
    dy = harness.randn(shape, dtype, device, g)
    dx, dw = torch.autograd.grad(y, [x, w], dy)
    x64 = x.detach().double().requires_grad_(True)
    w64 = w.detach().double().requires_grad_(True)
    rdx, rdw = torch.autograd.grad(rmsnorm_oracle(x64, w64), [x64, w64], dy.double())
    assert_close("dx", dx, rdx, 2 * tol)
    assert_close("dw", dw, rdw, 2 * tolerance(dtype, x.numel() // shape[-1]))


def test_module_matches_torch_rmsnorm(backend, device):
    _skip_unsupported(backend, torch.float32, device, "rmsnorm_fwd")
    ours = common.RMSNorm(64, eps=1e-6, backend=backend).to(device)
    theirs = torch.nn.RMSNorm(64, eps=1e-6).to(device)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(64))
        theirs.weight.copy_(ours.weight)
    assert set(ours.state_dict()) == set(theirs.state_dict()) == {"weight"}
    g, _ = harness.new_generator()
    x = harness.randn((3, 5, 64), torch.float32, device, g)
    assert_close("module vs torch.nn.RMSNorm", ours(x), theirs(x), 2e-6)
    assert "64, eps=1e-06, elementwise_affine=True" in repr(ours)
