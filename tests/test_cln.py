"""cLN: every backend against the float64 oracle (values, gradients, streaming, causality)."""

from __future__ import annotations

import pytest
import torch

import common
from common.reference import cln_oracle, cln_reference
from common.testing import assert_close, rel_error, tolerance
from tests import harness
from tests.harness import skip_unsupported as _skip_unsupported

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
# Odd sizes on purpose: C, T not powers of two, T = 1, B = 1, C = 1, and T long
# enough to span several time tiles of the GPU kernels.
SHAPES = [(1, 1, 1), (2, 3, 37), (1, 64, 5), (3, 16, 130), (2, 5, 301)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_forward(backend, device, shape, dtype, affine):
    _skip_unsupported(backend, dtype, device, "cln_fwd")
    harness.check_cln_forward(backend, device, shape, dtype, affine)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_backward(backend, device, shape, dtype, affine):
    _skip_unsupported(backend, dtype, device, "cln_bwd")
    harness.check_cln_backward(backend, device, shape, dtype, affine)


@pytest.mark.parametrize("wrt", ["gamma", "beta"])
@pytest.mark.parametrize("shape", [(2, 6, 50), (1, 40, 300)], ids=str)
def test_backward_one_param(backend, device, shape, wrt):
    """dgamma or dbeta alone (the other parameter frozen): a backend's partials buffer and
    reduction then hold one kind only."""
    _skip_unsupported(backend, torch.float32, device, "cln_bwd")
    harness.check_cln_backward(backend, device, shape, torch.float32, True, wrt=(wrt,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_dc_offset_1000(backend, device, dtype):
    """fp32 with a DC offset of 1000 std: near 1e-4, where E[x^2]-E[x]^2 gives 0.03-0.045."""
    _skip_unsupported(backend, dtype, device, "cln_fwd")
    err = harness.check_cln_forward(backend, device, (2, 32, 200), dtype, True, dc=1000.0)
    assert err < 2.5e-4
    harness.check_cln_backward(backend, device, (2, 16, 67), dtype, True, dc=1000.0)


@pytest.mark.parametrize("shape", [(2, 128, 600), (1, 1024, 1100)], ids=str)
def test_dc_offset_frames_repeating(backend, device, shape):
    """A signal constant in time (every frame the same C values) at a DC offset of 100 std.
    Its frames' float32 channel sums round alike, so, unlike a noisy signal's, their errors
    do not average out over the frames: the frames past the first C carry a frame's own
    D * u * sqrt(C) (less where a shift is taken).  Within tolerance all the same: under the
    interpreter Triton 2.2e-5 / 2.6e-5 against 8.7e-5 / 2.8e-4 at the two shapes, where the
    E[x^2] - E[x]^2 formula (common.peers.cln_cumsum_eager) gives 8.6e-4 / 4.6e-4."""
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    harness.check_cln_forward(
        backend, device, shape, torch.float32, True, dc=100.0, long=True, constant_in_time=True
    )


@pytest.mark.parametrize("shape", [(4, 4096, 1), (2, 512, 40), (2, 96, 300), (1, 8200, 3)], ids=str)
def test_dc_offset_many_channels_few_frames(backend, device, shape):
    """Frames with little history at a DC offset of 1000 std, float32.  A frame's mean is a
    float32 sum of C values, which loses about D * u * sqrt(C) (up to D * u * C in one running
    sum), and the first frames have no earlier frames to average it with: without the shift
    of the first C frames' sums (Triton's ``CLN_FWD_SHIFT``, cuda_ext's ``CLN_FWD_SHIFT``),
    (4, 4096, 1) was 3.8x the tolerance in Triton (interpreter) and 6.4x in cuda_ext's resident
    kernel (CPU emulator).  (2, 96, 300): the shifted tiles and later plain ones in one launch;
    (1, 8200, 3): Triton's channel blocks."""
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    harness.check_cln_forward(
        backend, device, shape, torch.float32, True, dc=1000.0, long=shape[-1] > 100
    )


def test_naive_formula_fails_dc_offset():
    """The eager cumsum peer (E[x^2] - E[x]^2) is what the tolerance rejects."""
    from common.peers import cln_cumsum_eager

    g, _ = harness.new_generator()
    x = harness.randn((2, 32, 200), torch.float32, torch.device("cpu"), g, 1000.0)
    err = rel_error(cln_cumsum_eager(x), cln_oracle(x.double()))
    assert err > 100 * tolerance(torch.float32, 32 * 200, 1000.0)


def _ill_conditioned_input(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A fresh (3, 1, 50) float32 draw whose sequence 1 starts with 0.7502, 0.7501 (the
    CI failure of seed 1748538939): frame 1's mean is 1.5e4 of its std there."""
    g, _ = harness.new_generator()
    x = harness.randn((3, 1, 50), torch.float32, torch.device("cpu"), g)
    x[1, 0, 0], x[1, 0, 1] = 0.7502, 0.7501
    gamma, beta = harness._params(1, True, torch.float32, device, g)
    return x.to(device), gamma, beta


def test_ill_conditioned_frame(backend, device):
    """Every backend meets the conditioned tolerance at a frame of two nearly equal values,
    and the plain one everywhere else: the allowance is local."""
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    x, gamma, beta = _ill_conditioned_input(device)
    y = common.cln(x, gamma, beta, backend=backend)
    ref, tol = harness.cln_oracle_tolerance(x, gamma, beta, torch.float32)
    assert_close(f"cln fwd ill-conditioned [{backend}]", y, ref, tol)
    plain = tolerance(torch.float32, 50)
    assert_close(f"cln fwd frames 2.. [{backend}]", y[..., 2:], ref[..., 2:], plain)
    assert_close(f"cln fwd sequences 0, 2 [{backend}]", y[::2], ref[::2], plain)


def test_conditioned_tolerance_only_where_needed():
    """The data-derived term adds under 4e-7 (3% of the plain 1.4e-5) on well-conditioned
    data and raises the tolerance at an ill-conditioned frame."""
    g, _ = harness.new_generator()
    x = harness.randn((4, 16, 200), torch.float32, torch.device("cpu"), g)
    ref = cln_oracle(x.double())
    plain = tolerance(torch.float32, 16 * 200)
    assert harness.cln_forward_tolerance(x, None, ref, torch.float32) < plain + 4e-7
    # Without gamma / beta: the allowance scales with |gamma| / ||ref||, and a draw of gamma
    # near 0 (1 + 0.5 z at z ~ -2) beside beta's 0.5 z left it under 5x the plain one in 12 of
    # 3000 draws (CI once, gamma = 0.023).  The raise is a property of the frame, not of gamma.
    bad, _, _ = _ill_conditioned_input(torch.device("cpu"))
    ref = cln_oracle(bad.double())
    assert harness.cln_forward_tolerance(bad, None, ref, torch.float32) > 5 * tolerance(
        torch.float32, 50
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_param_dtype_float32_with_low_precision_input(backend, device, dtype):
    _skip_unsupported(backend, dtype, device, "cln_fwd")
    harness.check_cln_forward(backend, device, (2, 6, 40), dtype, True, param_dtype=torch.float32)


def test_noncontiguous_input(backend, device):
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    harness.check_cln_forward(backend, device, (2, 12, 45), torch.float32, True, noncontiguous=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(2, 4, 97), (1, 33, 64), (3, 1, 50)], ids=str)
def test_streaming_random_splits(backend, device, shape, dtype):
    _skip_unsupported(backend, dtype, device, "cln_fwd")
    for _ in range(3):
        harness.check_cln_streaming(backend, device, shape, dtype)


def test_streaming_dc_offset(backend, device):
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    harness.check_cln_streaming(backend, device, (2, 8, 120), torch.float32, dc=1000.0)


def test_streaming_states_split_and_joined(backend, device):
    """A streaming server's batch changes: a stream ends (``state[keep]``) and another joins
    (``ClnState.cat``); every stream's output must still be the cLN of its own frames."""
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    g, seed = harness.new_generator()
    C = 5
    a, b, c, d = (harness.randn((1, C, 90), torch.float32, device, g, dc) for dc in (0, 3, 0, 30))
    gamma, beta = harness.randn((C,), torch.float32, device, g), torch.zeros(C, device=device)

    def step(x, state):
        return common.cln(x, gamma, beta, backend=backend, state=state, return_state=True)

    out: dict[str, list[torch.Tensor]] = {k: [] for k in "abcd"}
    y, s = step(torch.cat([a, b, c])[:, :, :30], None)  # a, b, c start together
    for k, yk in zip("abc", y.split(1), strict=True):
        out[k].append(yk)
    assert len(s) == 3 and len(s[1]) == 1 and len(s[-1:]) == 1
    s = s[[0, 2]]  # b ends
    y, s = step(torch.cat([a, c])[:, :, 30:60], s)
    out["a"].append(y[:1])
    out["c"].append(y[1:])
    yd, sd = step(d[:, :, :20], None)  # d starts alone, then joins a and c
    out["d"].append(yd)
    s = common.ClnState.cat([s, sd])
    y, s = step(torch.cat([a[:, :, 60:85], c[:, :, 60:85], d[:, :, 20:45]]), s)
    for k, yk in zip("acd", y.split(1), strict=True):
        out[k].append(yk)
    assert s.count.tolist() == [C * 85, C * 85, C * 45]
    for k, x in zip("abcd", (a, b, c, d), strict=True):
        got = torch.cat(out[k], -1)
        want = cln_oracle(x[:, :, : got.shape[-1]], gamma, beta)
        tol = tolerance(torch.float32, C * got.shape[-1], dc_offset=30.0)
        assert_close(f"stream {k} (seed={seed})", got, want, tol)
    with pytest.raises(ValueError, match="at least one"):
        common.ClnState.cat([])


@pytest.mark.parametrize("history", [1, 29], ids=lambda h: f"hist{h}")
def test_backward_with_state(backend, device, history):
    _skip_unsupported(backend, torch.float32, device, "cln_bwd")
    harness.check_cln_backward(
        backend, device, (2, 6, 41), torch.float32, True, history_frames=history
    )


@pytest.mark.parametrize("shape", [(2, 8, 150), (1, 64, 300)], ids=str)
def test_causality(backend, device, shape):
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    harness.check_cln_causal(backend, device, shape, torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "shape", [(4, 512, 1000), (2, 128, 20000), (80, 64, 301), (2, 2000, 300)], ids=str
)
def test_large_shapes_gpu(backend, device, shape, dtype):
    """GPU sizes (many tiles, long cross-tile prefixes) against the fast float64 reference."""
    if device.type != "cuda":
        pytest.skip("large shapes run on the GPU only")
    _skip_unsupported(backend, dtype, device, "cln_fwd")
    g, seed = harness.new_generator()
    B, C, T = shape
    x = harness.randn(shape, dtype, device, g, 3.0).requires_grad_(True)
    gamma = (1 + 0.5 * harness.randn((C,), torch.float32, device, g)).requires_grad_(True)
    beta = harness.randn((C,), torch.float32, device, g).requires_grad_(True)
    y = common.cln(x, gamma, beta, backend=backend)
    ref = cln_reference(x, gamma, beta)
    tol = tolerance(dtype, C * T, 3.0)
    assert_close(f"cln fwd large [{backend} {shape} {dtype} seed={seed}]", y, ref, tol)
    dy = harness.randn(shape, dtype, device, g)
    grads = torch.autograd.grad(y, [x, gamma, beta], dy)
    x64 = x.detach().double().requires_grad_(True)
    g64 = gamma.detach().double().requires_grad_(True)
    b64 = beta.detach().double().requires_grad_(True)
    refs = torch.autograd.grad(
        common.cln(x64, g64, b64, backend="eager"), [x64, g64, b64], dy.double()
    )
    for name, got, want in zip(["dx", "dgamma", "dbeta"], grads, refs):
        assert_close(
            f"cln bwd large {name} [{backend} {shape} {dtype} seed={seed}]", got, want, 2 * tol
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_forward_alone_matches_forward_for_training(backend, device, dtype):
    """A forward no backward follows (``torch.no_grad``: the kernel gets no per-frame
    statistics to write and may schedule itself for a forward alone) gives bitwise the output
    and the streaming state of one that keeps them for a backward.  On the GPU at a grid of
    several waves, where the Triton float32 forward alone is paced."""
    _skip_unsupported(backend, dtype, device, "cln_fwd")
    shape = (4, 128, 32768) if device.type == "cuda" else (2, 8, 130)
    g, seed = harness.new_generator()
    x = harness.randn(shape, dtype, device, g, 3.0)
    gamma = 1 + 0.5 * harness.randn((shape[1],), torch.float32, device, g)
    beta = harness.randn((shape[1],), torch.float32, device, g)
    with torch.no_grad():
        y0, s0 = common.cln(x, gamma, beta, backend=backend, return_state=True)
    xg = x.clone().requires_grad_(True)
    y1, s1 = common.cln(xg, gamma, beta, backend=backend, return_state=True)
    assert y1.requires_grad and not y0.requires_grad
    assert y0.grad_fn is None and y1.grad_fn is not None  # no autograd node without grad
    pairs = [("y", y0, y1.detach())]
    pairs += [(f, getattr(s0, f), getattr(s1, f)) for f in ("count", "mean", "m2")]
    for name, a, b in pairs:
        assert torch.equal(a, b), f"{name} differs [{backend} {shape} {dtype} seed={seed}]"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_forward_backward_bitwise_reproducible(backend, device, dtype):
    """Two forward + backward calls on the same inputs give bitwise the same y, dx, dgamma and
    dbeta (the README's "Determinism": every reduction, the dgamma / dbeta column sums
    included, runs in a fixed order, with no float atomics).  On the GPU at a shape of many
    tiles per sequence and several waves of programs, where a reduction whose order followed
    the timing would differ between the calls (``tests/wrong/unordered_sums.py`` does).  The
    eager backend is plain PyTorch, whose CUDA determinism is torch's to give
    (``torch.use_deterministic_algorithms``): skipped there."""
    if backend == "eager":
        pytest.skip("the eager backend's determinism is PyTorch's")
    _skip_unsupported(backend, dtype, device, "cln_bwd")
    shape = (4, 128, 32768) if device.type == "cuda" else (2, 8, 130)
    harness.check_cln_reproducible(backend, device, shape, dtype)


def test_module_streaming_and_state_dict(backend, device):
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    m = common.CumulativeLayerNorm(6, backend=backend).to(device)
    assert set(m.state_dict()) == {"weight", "bias"}
    assert "6, eps=1e-08, affine=True" in repr(m)
    g, _ = harness.new_generator()
    x = harness.randn((2, 6, 50), torch.float32, device, g)
    y_all = m(x)
    y1, s = m(x[:, :, :20], return_state=True)
    y2, s = m(x[:, :, 20:], state=s, return_state=True)
    assert_close("module streaming", torch.cat([y1, y2], -1), y_all, 1e-5)
    m2 = common.CumulativeLayerNorm(6, affine=False, backend=backend)
    assert list(m2.parameters()) == []


def test_module_loads_the_checkpoints_it_replaces(backend, device):
    """A separator trained with Asteroid's ``CumLN`` (``gamma``, ``beta`` (C,)) or the
    Conv-TasNet reference code's ``cLN`` (``gain``, ``bias`` (1, C, 1)) keeps its weights
    when the norm is swapped for ours, nested in a model as it would be; its output then
    is the definition's with those weights."""
    _skip_unsupported(backend, torch.float32, device, "cln_fwd")
    g, _ = harness.new_generator()
    C = 6
    gamma = harness.randn((C,), torch.float32, device, g)
    beta = harness.randn((C,), torch.float32, device, g)
    x = harness.randn((2, C, 40), torch.float32, device, g)
    foreign = {
        "asteroid": {"1.gamma": gamma, "1.beta": beta},
        "conv-tasnet": {"1.gain": gamma.view(1, C, 1), "1.bias": beta.view(1, C, 1)},
        "ours": {"1.weight": gamma, "1.bias": beta},
    }
    for name, sd in foreign.items():
        model = torch.nn.Sequential(
            torch.nn.Identity(), common.CumulativeLayerNorm(C, backend=backend)
        ).to(device)
        given = dict(sd)
        model.load_state_dict(sd)  # strict: nothing missing, nothing left over
        assert sd.keys() == given.keys() and all(sd[k] is given[k] for k in sd), name
        assert set(model.state_dict()) == {"1.weight", "1.bias"}, name
        assert torch.equal(model[1].weight, gamma) and torch.equal(model[1].bias, beta), name
        assert_close(name, model(x), cln_oracle(x, gamma, beta), tolerance(torch.float32, C * 40))
    # without affine parameters a foreign checkpoint's weights are reported under their names
    with pytest.raises(RuntimeError, match="gamma"):
        common.CumulativeLayerNorm(C, affine=False).load_state_dict({"gamma": gamma})
    # a shape that is neither (C,) nor (1, C, 1) is torch's usual size-mismatch error
    with pytest.raises(RuntimeError, match="size mismatch"):
        common.CumulativeLayerNorm(C).load_state_dict({"gain": gamma.view(C, 1), "bias": beta})
