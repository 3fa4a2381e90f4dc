"""Every bad input gets a clear error before any kernel runs."""

from __future__ import annotations

import pytest
import torch

import common
from tests import harness


def x3(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*(shape or (2, 4, 10))).to(dtype)


def test_cln_wrong_rank():
    with pytest.raises(ValueError, match=r"shape \(B, C, T\).*2-d"):
        common.cln(torch.randn(4, 10), backend="eager")
    with pytest.raises(ValueError, match="4-d"):
        common.cln(torch.randn(1, 2, 4, 10), backend="eager")


def test_rmsnorm_scalar_and_empty_last_dim():
    with pytest.raises(ValueError, match="scalar"):
        common.rmsnorm(torch.tensor(1.0), backend="eager")
    with pytest.raises(ValueError, match="N >= 1"):
        common.rmsnorm(torch.randn(3, 0), backend="eager")


def test_cln_mismatched_params():
    with pytest.raises(ValueError, match=r"gamma must have shape \(4,\).*got \(5,\)"):
        common.cln(x3(), torch.ones(5), backend="eager")
    with pytest.raises(ValueError, match=r"beta must have shape \(4,\)"):
        common.cln(x3(), torch.ones(4), torch.zeros(4, 1), backend="eager")


def test_rmsnorm_mismatched_weight():
    with pytest.raises(ValueError, match=r"weight must have shape \(8,\).*got \(7,\)"):
        common.rmsnorm(torch.randn(3, 8), torch.ones(7), backend="eager")


def test_non_float_and_non_tensor_inputs():
    with pytest.raises(TypeError, match="floating-point"):
        common.cln(torch.ones(2, 3, 4, dtype=torch.int32), backend="eager")
    with pytest.raises(TypeError, match="torch.Tensor"):
        common.rmsnorm([1.0, 2.0], backend="eager")


def test_bad_eps():
    with pytest.raises(ValueError, match="eps must be a positive"):
        common.cln(x3(), eps=0.0, backend="eager")
    with pytest.raises(ValueError, match="eps must be a positive"):
        common.rmsnorm(torch.randn(2, 3), eps=-1.0, backend="eager")


def test_bad_state():
    x = x3(2, 4, 10)
    bad = common.ClnState.initial(3)
    with pytest.raises(ValueError, match=r"state.count must have shape \(2,\)"):
        common.cln(x, backend="eager", state=bad)
    with pytest.raises(TypeError, match="ClnState"):
        common.cln(x, backend="eager", state=(1, 2, 3))


def test_unknown_backend_lists_known_ones():
    with pytest.raises(common.UnknownBackendError, match="known backends: .*eager.*triton"):
        common.cln(x3(), backend="tritonn")
    with pytest.raises(ValueError, match="unknown backend"):  # also a ValueError
        common.get_backend("nope")
    # The modules check the name when built, before a forward (or a torch.compile trace) runs.
    for make in (common.CumulativeLayerNorm, common.RMSNorm):
        with pytest.raises(common.UnknownBackendError, match="known backends: .*eager"):
            make(8, backend="tritonn")


def test_env_var_selects_and_unknown_env_raises(monkeypatch):
    monkeypatch.setenv("NORM_BACKEND", "eager")
    assert torch.isfinite(common.cln(x3())).all()
    monkeypatch.setenv("NORM_BACKEND", "bogus")
    with pytest.raises(common.UnknownBackendError, match="bogus"):
        common.cln(x3())
    # The explicit argument wins over the environment variable.
    assert torch.isfinite(common.cln(x3(), backend="eager")).all()


@pytest.fixture
def fake_backend(request):
    """A test double running the eager kernels, declaring what the test asks for."""
    fields = dict(request.param)
    with harness.registered_backend(fields.pop("name"), "common.eager", **fields) as name:
        yield name


@pytest.mark.parametrize("fake_backend", [{"name": "f32only"}], indirect=True)
def test_unsupported_dtype_names_backend_op_dtype_device(fake_backend):
    with pytest.raises(common.UnsupportedError) as ei:
        common.cln(x3(dtype=torch.float16), backend=fake_backend)
    msg = str(ei.value)
    assert "'f32only'" in msg and "'cln_fwd'" in msg and "float16" in msg and "'cpu'" in msg


@pytest.mark.parametrize(
    "fake_backend",
    [{"name": "fwdonly", "ops": frozenset({"cln_fwd", "rmsnorm_fwd"})}],
    indirect=True,
)
def test_unsupported_op_raises_before_running(fake_backend):
    x = x3().requires_grad_(True)
    with pytest.raises(common.UnsupportedError, match="'cln_bwd'"):
        common.cln(x, backend=fake_backend)
    with torch.no_grad():  # forward alone is fine
        common.cln(x, backend=fake_backend)
    with pytest.raises(common.UnsupportedError, match="'rmsnorm_bwd'"):
        common.rmsnorm(torch.randn(2, 3, requires_grad=True), backend=fake_backend)


@pytest.mark.parametrize(
    "fake_backend", [{"name": "gpuonly", "devices": frozenset({"cuda"})}], indirect=True
)
def test_unsupported_device(fake_backend):
    with pytest.raises(common.UnsupportedError, match="device 'cpu'.*it has: cuda"):
        common.rmsnorm(torch.randn(2, 3), backend=fake_backend)


@pytest.mark.parametrize("fake_backend", [{"name": "nostream", "streaming": False}], indirect=True)
def test_streaming_unsupported(fake_backend):
    with pytest.raises(common.UnsupportedError, match="streaming"):
        common.cln(x3(), backend=fake_backend, state=common.ClnState.initial(2))


@pytest.mark.parametrize(
    "fake_backend",
    [
        {
            "name": "notinstalled",
            "probe": lambda: "the 'foo' package is not installed",
            "requires": "pip install foo",
        }
    ],
    indirect=True,
)
def test_missing_toolchain_says_what_to_install(fake_backend):
    with pytest.raises(common.BackendUnavailableError, match="'foo' package.*pip install foo"):
        common.cln(x3(), backend=fake_backend)
    assert fake_backend not in common.available_backends()


def test_explicit_gpu_backend_on_cpu_never_falls_back():
    """Asking for a GPU backend with CPU tensors raises; it never runs eager instead."""
    spec = common.get_backend("cuda_ext")
    with pytest.raises((common.BackendUnavailableError, common.UnsupportedError)):
        common.cln(x3(), backend=spec.name)


def test_param_device_mismatch():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device to put a parameter elsewhere")
    with pytest.raises(ValueError, match="gamma is on cpu but x is on cuda"):
        common.cln(x3().cuda(), torch.ones(4), backend="eager")


def test_zero_channels_and_empty_inputs():
    with pytest.raises(ValueError, match="C >= 1"):
        common.cln(torch.randn(2, 0, 5), backend="eager")
    y, s = common.cln(torch.randn(2, 3, 0), backend="eager", return_state=True)
    assert y.shape == (2, 3, 0) and int(s.count.sum()) == 0
    assert common.rmsnorm(torch.randn(0, 5), backend="eager").shape == (0, 5)


@pytest.mark.parametrize("x_grad", [True, False], ids=["x_grad", "params_only"])
def test_empty_inputs_give_parameters_zero_gradients(backend, device, x_grad):
    """As F.rms_norm and F.group_norm: an empty batch still has a graph to the parameters
    that require grad, whose gradients are zeros (not None: an optimizer would skip them and
    DDP report them unused), whether or not x requires grad."""
    gamma = torch.randn(3, device=device, requires_grad=True)
    beta = torch.randn(3, device=device, requires_grad=True)
    w = torch.randn(5, device=device, requires_grad=True)
    cases = [
        ("cln", lambda x: common.cln(x, gamma, beta, backend=backend), (2, 3, 0), (gamma, beta)),
        ("cln", lambda x: common.cln(x, gamma, None, backend=backend), (0, 3, 4), (gamma,)),
        ("rmsnorm", lambda x: common.rmsnorm(x, w, backend=backend), (0, 5), (w,)),
        ("rmsnorm", lambda x: common.rmsnorm(x, w, backend=backend), (2, 0, 5), (w,)),
    ]
    for op, fn, shape, params in cases:
        if not harness.declares(backend, f"{op}_bwd", device):
            continue
        for p in params:
            p.grad = None
        x = torch.randn(shape, device=device, requires_grad=x_grad)
        y = fn(x)
        assert y.shape == shape and y.dtype == x.dtype and y.requires_grad
        y.sum().backward()
        for p in params:
            assert p.grad is not None and torch.equal(p.grad, torch.zeros_like(p)), shape
        if x_grad:
            assert x.grad is not None and x.grad.shape == shape
    with torch.no_grad():
        assert not common.cln(torch.randn(2, 3, 0, device=device), gamma, beta).requires_grad


def test_double_backward_raises(backend, device):
    """A gradient penalty through the norms must raise, never drop their second-order terms.

    The incoming gradient of a loss linear in y does not require grad, so torch's
    once_differentiable left the gradients without a grad_fn and the second backward silently
    left the norms out (common/api.py, _first_order_only).  The gradient itself, formed with
    create_graph=True, must equal the plain one.
    """
    torch.manual_seed(0)
    x = torch.randn(2, 4, 12, device=device, requires_grad=True)
    gamma = torch.rand(4, device=device).add_(0.5).requires_grad_(True)
    w = torch.linspace(0.0, 1.0, 12, device=device)
    rows = torch.randn(3, 16, device=device, requires_grad=True)
    v = torch.linspace(-1.0, 1.0, 16, device=device)
    cases = [
        ("cln", lambda: common.cln(x, gamma, backend=backend) * w, (x, gamma)),
        ("rmsnorm", lambda: common.rmsnorm(rows, backend=backend) * v, (rows,)),
    ]
    for op, f, inputs in cases:
        if not harness.declares(backend, f"{op}_bwd", device):
            continue
        plain = torch.autograd.grad(f().sum(), inputs)
        grads = torch.autograd.grad(f().sum(), inputs, create_graph=True)
        for g, p in zip(grads, plain, strict=True):
            assert g.requires_grad, op
            assert torch.equal(g.detach(), p), op
        penalty = sum((g**2).sum() for g in grads) + sum((t**2).sum() for t in inputs)
        with pytest.raises(RuntimeError, match=rf"{op}: double backward is not supported"):
            penalty.backward()


def test_torch_func_transforms_raise_clearly(backend, device):
    """vmap / grad of torch.func hand the ops wrapped tensors, which no kernel can take: a clear
    NotImplementedError at the call, not a failure deep inside a kernel."""
    x = torch.randn(3, 2, 4, 6, device=device)
    rows = torch.randn(3, 5, 8, device=device)
    msg = "does not support torch.func transforms"
    with pytest.raises(NotImplementedError, match="cln " + msg):
        torch.vmap(lambda t: common.cln(t, backend=backend))(x)
    with pytest.raises(NotImplementedError, match="rmsnorm " + msg):
        torch.vmap(lambda t: common.rmsnorm(t, backend=backend))(rows)
    with pytest.raises(NotImplementedError, match="cln " + msg):
        torch.func.grad(lambda t: common.cln(t, backend=backend).sum())(x[0])
    w = torch.ones(3, 8, device=device)  # only the parameter transformed (model ensembling)
    with pytest.raises(NotImplementedError, match="rmsnorm " + msg):
        torch.vmap(lambda v: common.rmsnorm(rows[0], v, backend=backend))(w)
