"""Device and stream placement: kernels run on the input's device and current stream."""

from __future__ import annotations

import pytest
import torch

import common
from common.reference import cln_reference, rmsnorm_reference
from common.testing import assert_close, tolerance
from tests import harness


def _cuda_backend(backend: str, device: torch.device) -> None:
    if device.type != "cuda":
        pytest.skip("needs a CUDA device")


def test_second_gpu(backend, device):
    """A tensor on cuda:1 runs on cuda:1 while cuda:0 is current."""
    _cuda_backend(backend, device)
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    g, seed = harness.new_generator()
    dev1 = torch.device("cuda", 1)
    with torch.cuda.device(0):
        x = harness.randn((2, 32, 500), torch.float32, dev1, g).requires_grad_(True)
        y = common.cln(x, backend=backend)
        assert y.device == dev1
        assert_close(
            f"cln on cuda:1 seed={seed}", y, cln_reference(x), tolerance(torch.float32, 32 * 500)
        )
        y.sum().backward()
        assert x.grad is not None and x.grad.device == dev1 and torch.isfinite(x.grad).all()
        h = harness.randn((64, 1024), torch.bfloat16, dev1, g).requires_grad_(True)
        w = torch.ones(1024, dtype=torch.bfloat16, device=dev1, requires_grad=True)
        out = common.rmsnorm(h, w, backend=backend)
        assert out.device == dev1
        assert_close("rmsnorm on cuda:1", out, rmsnorm_reference(h, w), tolerance(torch.bfloat16))
        out.float().square().sum().backward()
        for t in (h, w):
            assert t.grad is not None and t.grad.device == dev1 and torch.isfinite(t.grad).all()


def test_current_stream(backend, device):
    """Work is ordered on the caller's stream: results are right without a device sync."""
    _cuda_backend(backend, device)
    g, seed = harness.new_generator()
    s = torch.cuda.Stream(device=device)
    x = harness.randn((4, 64, 2000), torch.float32, device, g)
    h = harness.randn((4096, 2048), torch.float32, device, g)
    s.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(s):
        x2 = x * 2.0  # produced on s; a kernel on another stream could race it
        y = common.cln(x2, backend=backend)
        z = common.rmsnorm(h * 3.0, backend=backend)
        ysum = y.double().sum()
    torch.cuda.current_stream(device).wait_stream(s)
    assert_close(f"cln on side stream seed={seed}", y, cln_reference(x * 2.0), 1e-5)
    assert_close("rmsnorm on side stream", z, rmsnorm_reference(h * 3.0), 1e-5)
    assert torch.isfinite(ysum)
