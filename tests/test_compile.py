"""The norms inside ``torch.compile``: whole graphs (``fullgraph=True``, no graph break), the
same kernels as eager calls (bitwise the same outputs and gradients), forward alone, training
and streaming.  Inductor on the GPU; on the CPU ``aot_eager`` (Dynamo, fake tensors and
AOTAutograd without a C++ compiler), with the Triton kernels under the interpreter."""

from __future__ import annotations

import pytest
import torch

import common
from tests import harness


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _compile(fn, device: torch.device):
    return torch.compile(
        fn, fullgraph=True, backend="inductor" if device.type == "cuda" else "aot_eager"
    )


def _dtypes(device: torch.device) -> list[torch.dtype]:
    return [torch.float32, torch.bfloat16] if device.type == "cuda" else [torch.float32]


def _grads(out: torch.Tensor, dy: torch.Tensor, ins: list[torch.Tensor]) -> list[torch.Tensor]:
    return list(torch.autograd.grad(out, ins, dy))


def _same(what: str, got: list[torch.Tensor], want: list[torch.Tensor], seed: int) -> None:
    for i, (a, r) in enumerate(zip(got, want, strict=True)):
        assert torch.isfinite(r).all(), f"{what}: eager output {i} not finite (seed={seed})"
        assert torch.equal(a, r), f"{what}: compiled output {i} differs from eager (seed={seed})"


def test_cln_compiled_is_the_eager_kernel(backend, device):
    harness.skip_unsupported(backend, torch.float32, device, "cln_bwd")
    for dtype in _dtypes(device):
        g, seed = harness.new_generator()
        B, C, T = 2, 16, 300
        x = harness.randn((B, C, T), dtype, device, g)
        gamma = 1 + 0.5 * harness.randn((C,), dtype, device, g)
        beta = harness.randn((C,), dtype, device, g)
        dy = harness.randn((B, C, T), dtype, device, g)

        def f(x, gamma, beta):
            return common.cln(x, gamma, beta, backend=backend)

        cf = _compile(f, device)
        with torch.no_grad():  # the forward alone (no statistics kept)
            _same(f"cln fwd {dtype}", [cf(x, gamma, beta)], [f(x, gamma, beta)], seed)
        ins = [t.detach().requires_grad_(True) for t in (x, gamma, beta)]
        want = _grads(f(*ins), dy, ins)
        ins2 = [t.detach().requires_grad_(True) for t in (x, gamma, beta)]
        y2 = cf(*ins2)
        _same(f"cln y {dtype}", [y2.detach()], [f(x, gamma, beta).detach()], seed)
        _same(f"cln grads {dtype}", _grads(y2, dy, ins2), want, seed)


def test_cln_streaming_compiled(backend, device):
    harness.skip_unsupported(backend, torch.float32, device, "cln_fwd")
    g, seed = harness.new_generator()
    x = harness.randn((2, 8, 90), torch.float32, device, g)

    def f(x):
        y1, state = common.cln(x[..., :35], backend=backend, return_state=True)
        y2, state = common.cln(x[..., 35:], backend=backend, state=state, return_state=True)
        return torch.cat([y1, y2], -1), state.count, state.mean, state.m2

    with torch.no_grad():
        _same("cln streaming", list(_compile(f, device)(x)), list(f(x)), seed)


def test_rmsnorm_compiled_is_the_eager_kernel(backend, device):
    harness.skip_unsupported(backend, torch.float32, device, "rmsnorm_bwd")
    for dtype in _dtypes(device):
        g, seed = harness.new_generator()
        h = harness.randn((6, 40, 96), dtype, device, g)[:, :, :80]  # rows with a stride
        w = 1 + 0.5 * harness.randn((80,), dtype, device, g)
        dy = harness.randn((6, 40, 80), dtype, device, g)

        def f(h, w):
            return common.rmsnorm(h, w, backend=backend)

        cf = _compile(f, device)
        with torch.no_grad():
            _same(f"rmsnorm fwd {dtype}", [cf(h, w)], [f(h, w)], seed)
        ins = [t.detach().requires_grad_(True) for t in (h, w)]
        want = _grads(f(*ins), dy, ins)
        ins2 = [t.detach().requires_grad_(True) for t in (h, w)]
        _same(f"rmsnorm grads {dtype}", _grads(cf(*ins2), dy, ins2), want, seed)


def test_modules_in_a_compiled_model(backend, device):
    """A Conv-TasNet-like block and an LLM-like block, compiled whole, against the same modules
    run eagerly (the other layers may be fused by the compiler, so within float32 rounding)."""
    torch.manual_seed(harness.new_generator()[1])
    models = []
    if harness.declares(backend, "cln_bwd", device):
        tasnet = torch.nn.Sequential(
            torch.nn.Conv1d(8, 16, 1),
            common.CumulativeLayerNorm(16, backend=backend),
            torch.nn.PReLU(),
        )
        models.append((tasnet, (2, 8, 120)))
    if harness.declares(backend, "rmsnorm_bwd", device):
        llm = torch.nn.Sequential(torch.nn.Linear(32, 64), common.RMSNorm(64, backend=backend))
        models.append((llm, (3, 5, 32)))
    if not models:
        pytest.skip(f"{backend} declares neither backward for float32 on {device.type}")
    for model, shape in models:
        model.to(device)
        x = torch.randn(shape, device=device, requires_grad=True)
        ref = model(x)
        ref_grads = torch.autograd.grad(ref.square().sum(), [x, *model.parameters()])
        out = _compile(model, device)(x)
        grads = torch.autograd.grad(out.square().sum(), [x, *model.parameters()])
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        for a, r in zip(grads, ref_grads, strict=True):
            torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-4)
