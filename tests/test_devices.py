"""Device and stream placement: kernels run on the input's device and current stream."""

from __future__ import annotations

import os

import pytest
import torch

import common
from common.reference import cln_reference, rmsnorm_reference
from common.testing import assert_close, tolerance
from tests import harness

# A long-T shape whose launches take every path of the large kernels: thousands of tiles per
# call (the cross-program prefix in groups, the forward alone's pace and the first-wave
# stagger, both of which need at least two waves of programs), against the seed-like shape of
# one program per sequence.
_LONG = (2, 128, 40000)
_SHAPES = [(3, 32, 500), _LONG]


def _cuda_backend(backend: str, device: torch.device) -> None:
    if device.type != "cuda":
        pytest.skip("needs a CUDA device")


# The device the placement tests put their tensors on while cuda:0 is current.  1 by default;
# NORMK_TEST_SECOND_GPU=0 runs the same code on a one-GPU machine (a dry run of the tests
# themselves: the placement is then not tested, the paths and the determinism still are).
_SECOND = int(os.environ.get("NORMK_TEST_SECOND_GPU", "1"))


def _two_gpus(backend: str, device: torch.device) -> torch.device:
    _cuda_backend(backend, device)
    if torch.cuda.device_count() <= _SECOND:
        pytest.skip(f"needs a GPU cuda:{_SECOND} (NORMK_TEST_SECOND_GPU)")
    return torch.device("cuda", _SECOND)


def test_second_gpu(backend, device):
    """A tensor on cuda:1 runs on cuda:1 while cuda:0 is current."""
    dev1 = _two_gpus(backend, device)
    g, seed = harness.new_generator()
    with torch.cuda.device(0):
        x = harness.randn((2, 32, 500), torch.float32, dev1, g).requires_grad_(True)
        y = common.cln(x, backend=backend)
        assert y.device == dev1
        assert_close(
            f"cln on {dev1} seed={seed}", y, cln_reference(x), tolerance(torch.float32, 32 * 500)
        )
        y.sum().backward()
        assert x.grad is not None and x.grad.device == dev1 and torch.isfinite(x.grad).all()
        if not harness.declares(backend, "rmsnorm_bwd", device):
            return
        h = harness.randn((64, 1024), torch.bfloat16, dev1, g).requires_grad_(True)
        w = torch.ones(1024, dtype=torch.bfloat16, device=dev1, requires_grad=True)
        out = common.rmsnorm(h, w, backend=backend)
        assert out.device == dev1
        assert_close(f"rmsnorm on {dev1}", out, rmsnorm_reference(h, w), tolerance(torch.bfloat16))
        out.float().square().sum().backward()
        for t in (h, w):
            assert t.grad is not None and t.grad.device == dev1 and torch.isfinite(t.grad).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_second_gpu_cln(backend, device, shape, dtype):
    """cLN on cuda:1 with cuda:0 current, against the float64 references: the forward alone (no
    gradient: the paced path of 4-byte inputs), the forward and backward, and streaming."""
    dev1 = _two_gpus(backend, device)
    with torch.cuda.device(0):
        harness.check_cln_forward(backend, dev1, shape, dtype, long=True)
        harness.check_cln_backward(backend, dev1, shape, dtype, long=True)
        if shape != _LONG:  # the oracle of the streaming check is O(T^2)
            harness.check_cln_streaming(backend, dev1, shape, dtype)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("shape", [(4096, 1024), (3, 262144)], ids=str)
def test_second_gpu_rmsnorm(backend, device, shape, strided):
    """RMSNorm on cuda:1 with cuda:0 current: many short rows and the looped path of long ones."""
    dev1 = _two_gpus(backend, device)
    harness.skip_unsupported(backend, torch.float32, dev1, "rmsnorm_bwd")
    with torch.cuda.device(0):
        for dtype in (torch.float32, torch.bfloat16):
            harness.check_rmsnorm_forward(backend, dev1, shape, dtype, strided=strided)
            harness.check_rmsnorm_backward(backend, dev1, shape, dtype, strided=strided)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_both_gpus_bitwise(backend, device, dtype):
    """The same call on cuda:0 and cuda:1, interleaved without a synchronization in between,
    gives bitwise the same outputs and gradients: the kernels reduce in a fixed order, so any
    difference is state (scratch words, cached launch plans, compiled kernels) leaking between
    devices.  Each device runs the forward alone, then the forward and backward, twice."""
    dev1 = _two_gpus(backend, device)
    g, seed = harness.new_generator()
    C = _LONG[1]
    x0 = harness.randn(_LONG, dtype, torch.device("cuda", 0), g)
    dy0 = harness.randn(_LONG, dtype, x0.device, g)
    gamma0 = 1 + 0.5 * harness.randn((C,), dtype, x0.device, g)
    beta0 = harness.randn((C,), dtype, x0.device, g)
    h0 = harness.randn((2048, 4096), dtype, x0.device, g)
    w0 = 1 + 0.5 * harness.randn((4096,), dtype, x0.device, g)

    def run(dev: torch.device) -> list[torch.Tensor]:
        x, dy, gamma, beta, h, w = (t.to(dev) for t in (x0, dy0, gamma0, beta0, h0, w0))
        with torch.cuda.device(dev):
            with torch.no_grad():
                y_alone = common.cln(x, gamma, beta, backend=backend)
            xr, gr, br = (t.detach().requires_grad_(True) for t in (x, gamma, beta))
            y = common.cln(xr, gr, br, backend=backend)
            grads = torch.autograd.grad(y, [xr, gr, br], dy)
            if not harness.declares(backend, "rmsnorm_bwd", device):
                return [y_alone, y.detach(), *grads]
            hr, wr = h.detach().requires_grad_(True), w.detach().requires_grad_(True)
            out = common.rmsnorm(hr, wr, backend=backend)
            rgrads = torch.autograd.grad(out, [hr, wr], torch.ones_like(out))
        return [y_alone, y.detach(), *grads, out.detach(), *rgrads]

    devs = [torch.device("cuda", 0), dev1]
    runs = [run(devs[i % 2]) for i in range(4)]  # 0, 1, 0, 1: no sync in between
    for d in devs:
        torch.cuda.synchronize(d)
    names = ["y (forward alone)", "y", "dx", "dgamma", "dbeta", "rms y", "rms dx", "rms dw"]
    names = names[: len(runs[0])]
    for i, got in enumerate(runs[1:], start=1):
        assert got[0].device == devs[i % 2]
        for name, a, r in zip(names, got, runs[0], strict=True):
            assert torch.isfinite(r).all(), f"{name} not finite on cuda:0 (seed={seed})"
            assert torch.equal(a.cpu(), r.cpu()), (
                f"{name} of run {i} ({devs[i % 2]}) differs from cuda:0's (seed={seed})"
            )


def test_current_stream(backend, device):
    """Work is ordered on the caller's stream: results are right without a device sync."""
    _cuda_backend(backend, device)
    g, seed = harness.new_generator()
    s = torch.cuda.Stream(device=device)
    x = harness.randn((4, 64, 2000), torch.float32, device, g)
    h = harness.randn((4096, 2048), torch.float32, device, g)
    s.wait_stream(torch.cuda.current_stream(device))
    rms = harness.declares(backend, "rmsnorm_bwd", device)
    with torch.cuda.stream(s):
        x2 = x * 2.0  # produced on s; a kernel on another stream could race it
        y = common.cln(x2, backend=backend)
        z = common.rmsnorm(h * 3.0, backend=backend) if rms else None
        ysum = y.double().sum()
    torch.cuda.current_stream(device).wait_stream(s)
    assert_close(f"cln on side stream seed={seed}", y, cln_reference(x * 2.0), 1e-5)
    if z is not None:
        assert_close("rmsnorm on side stream", z, rmsnorm_reference(h * 3.0), 1e-5)
    assert torch.isfinite(ysum)
