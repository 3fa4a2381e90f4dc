"""Check functions shared by the parametrized tests and the negative controls.

Each draws fresh random inputs (the seed is in every failure message), runs
one backend through the public API (outputs poisoned with NaN by conftest),
and compares with the float64 oracle of :mod:`common.reference` using the one
tolerance table of :mod:`common.testing`.  Each raises ``AssertionError`` on a
mismatch, so a deliberately wrong kernel is caught by the same code.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator

import torch
from torch import Tensor

import common
from common import eager
from common.reference import cln_oracle, rmsnorm_oracle
from common.registry import OPS, BackendSpec, register_backend, unregister_backend
from common.testing import (
    assert_close,
    conditioned_terms_tolerance,
    conditioned_tolerance,
    rel_error,
    tolerance,
)


@contextlib.contextmanager
def registered_backend(
    name: str,
    module: str,
    *,
    dtypes: frozenset[torch.dtype] = frozenset({torch.float32}),
    devices: frozenset[str] = frozenset({"cpu"}),
    **fields: object,
) -> Iterator[str]:
    """Register a test backend (a negative control, a test double) for the block."""
    spec = BackendSpec(
        name=name,
        description=str(fields.pop("description", f"test backend ({module})")),
        module=module,
        ops=fields.pop("ops", frozenset(OPS)),  # type: ignore[arg-type]
        dtypes=dtypes,
        devices=devices,
        **fields,  # type: ignore[arg-type]
    )
    register_backend(spec)
    try:
        yield name
    finally:
        unregister_backend(name)


def backend_device(backend: str) -> torch.device:
    """Where ``backend`` runs here: the GPU if it can, else its CPU emulator; skips (with
    the reason) where it cannot run at all."""
    import pytest

    spec = common.get_backend(backend)
    reason = spec.unavailable_reason()
    if reason is not None:
        pytest.skip(f"backend {backend!r} cannot run here: {reason}")
    devs = spec.supported_devices()
    if torch.cuda.is_available() and "cuda" in devs:
        return torch.device("cuda", torch.cuda.current_device())
    if "cpu" in devs:
        return torch.device("cpu")
    pytest.skip(f"backend {backend!r} needs one of {sorted(devs)}, none here")


def declares(
    backend: str, op: str, device: torch.device, dtype: torch.dtype = torch.float32
) -> bool:
    """Whether ``backend`` declares ``op`` for ``dtype`` on ``device`` (not every backend has
    both norms: ``triton_minimal`` is cLN only)."""
    return common.get_backend(backend).supports(op, dtype, device)


def skip_unsupported(backend: str, dtype: torch.dtype, device: torch.device, op: str) -> None:
    """Skip (with the reason) a case outside what ``backend`` declares."""
    import pytest

    if not declares(backend, op, device, dtype):
        pytest.skip(f"{backend} does not declare {op} for {dtype} on {device.type}")


def new_generator() -> tuple[torch.Generator, int]:
    seed = int.from_bytes(os.urandom(4), "little")
    g = torch.Generator().manual_seed(seed)
    return g, seed


def randn(
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device,
    gen: torch.Generator,
    offset: float = 0.0,
) -> Tensor:
    """Random normal data (drawn in float64 on the CPU, then cast): never zeros."""
    t = torch.randn(shape, generator=gen, dtype=torch.float64) + offset
    return t.to(dtype=dtype).to(device)


def _params(
    C: int,
    affine: bool,
    dtype: torch.dtype,
    device: torch.device,
    gen: torch.Generator,
    grad: tuple[str, ...] = (),
) -> tuple[Tensor | None, Tensor | None]:
    """gamma and beta (None, None unless ``affine``); those named in ``grad`` require a
    gradient."""
    if not affine:
        return None, None
    gamma = (1.0 + 0.5 * randn((C,), dtype, device, gen)).requires_grad_("gamma" in grad)
    beta = (0.5 * randn((C,), dtype, device, gen)).requires_grad_("beta" in grad)
    return gamma, beta


# ----------------------------------------------------------------------------- cLN
def check_cln_forward(
    backend: str,
    device: torch.device,
    shape: tuple[int, int, int],
    dtype: torch.dtype,
    affine: bool = True,
    dc: float = 0.0,
    param_dtype: torch.dtype | None = None,
    noncontiguous: bool = False,
    long: bool = False,
    constant_in_time: bool = False,
) -> float:
    """The forward against the float64 oracle; ``long``: against the eager backend in float64
    instead (:func:`cln_reference64`: O(T) where the oracle is O(T^2), for thousands of
    frames).  ``constant_in_time``: every frame the same C values (one draw repeated)."""
    gen, seed = new_generator()
    B, C, T = shape
    if noncontiguous:  # a (B, T, C) tensor seen as (B, C, T): time is not the last stride
        x = randn((B, T, C), dtype, device, gen, dc).transpose(1, 2)
    elif constant_in_time:
        x = randn((B, C, 1), dtype, device, gen, dc).expand(B, C, T).contiguous()
    else:
        x = randn(shape, dtype, device, gen, dc)
    gamma, beta = _params(C, affine, param_dtype or dtype, device, gen)
    y = common.cln(x, gamma, beta, backend=backend)
    if long:
        ref = cln_reference64(x.double().cpu(), _cpu(gamma), _cpu(beta))
        tol = cln_forward_tolerance(x, gamma, ref, dtype, dc)
    else:
        ref, tol = cln_oracle_tolerance(x, gamma, beta, dtype, dc)
    assert y.dtype == dtype and y.shape == x.shape and y.device == x.device
    return assert_close(f"cln fwd [{backend} {shape} {dtype} dc={dc} seed={seed}]", y, ref, tol)


def check_cln_backward(
    backend: str,
    device: torch.device,
    shape: tuple[int, int, int],
    dtype: torch.dtype,
    affine: bool = True,
    dc: float = 0.0,
    history_frames: int = 0,
    wrt: tuple[str, ...] = ("gamma", "beta"),
    long: bool = False,
) -> dict[str, float]:
    """Gradients against float64 autograd of the oracle.

    With ``history_frames`` > 0 the chunk continues a sequence (streaming
    state in), and the oracle sees those frames as detached history.
    ``wrt``: the parameters that require a gradient (the others are frozen:
    the backend is then asked for dgamma or dbeta alone).  ``long``: against
    float64 autograd of the eager backend instead (:func:`cln_reference64`).
    """
    gen, seed = new_generator()
    B, C, T = shape
    hist = randn((B, C, history_frames), dtype, device, gen, dc) if history_frames else None
    x = randn(shape, dtype, device, gen, dc).requires_grad_(True)
    gamma, beta = _params(C, affine, dtype, device, gen, grad=wrt)
    want = {p: t is not None and t.requires_grad for p, t in (("gamma", gamma), ("beta", beta))}
    dy = randn(shape, dtype, device, gen)
    state = None
    if hist is not None:
        _, state = common.cln(hist, gamma, beta, backend=backend, return_state=True)
    y = common.cln(x, gamma, beta, backend=backend, state=state)
    grads = torch.autograd.grad(
        y, [t for t in (x, gamma, beta) if t is not None and t.requires_grad], dy
    )

    x64 = x.detach().double().cpu().requires_grad_(True)
    g64 = _cpu(gamma, grad=want["gamma"])
    b64 = _cpu(beta, grad=want["beta"])
    h64 = None if hist is None else hist.double().cpu()
    ref = (cln_reference64 if long else cln_oracle)(x64, g64, b64, history=h64)
    refs = torch.autograd.grad(
        ref, [t for t in (x64, g64, b64) if t is not None and t.requires_grad], dy.double().cpu()
    )
    names = ["dx"] + [f"d{p}" for p in ("gamma", "beta") if want[p]]
    assert len(grads) == len(names) == len(refs)
    # Each result is judged against the size of what was summed, not of what was left: dx is a
    # difference of terms of size r * g; dgamma and dbeta are sums over B * T frames of
    # dy * xhat and dy, whose signs can cancel (tolerance() models a sum's rounding relative to
    # the sum of random-sign terms, sqrt(n) times a term: the terms' norm).
    with torch.no_grad():
        full = (x64 if h64 is None else torch.cat([h64, x64], -1)).detach()
        mu, r = (s[:, -T:] for s in _cln_stats64(full))
        dy64 = dy.double().cpu()
        g = dy64 * (1.0 if g64 is None else g64.detach()[:, None])
        # Each term's conditioning, as the forward's (cln_forward_tolerance): xhat of a frame
        # of a few nearly equal values loses |mu_t| * rstd_t ulps whatever the kernel does.
        kappa = (mu.abs() * r)[:, None, :]
        terms = {
            "dx": r[:, None, :] * g,
            "dgamma": dy64 * (x64.detach() - mu[:, None, :]) * r[:, None, :],
            "dbeta": dy64,
        }
        scales = {name: t.norm().item() for name, t in terms.items()}
        # What multiplies xhat's (absolute) error in each term: r * g in dx, dy in dgamma
        # (conditioned_terms_tolerance); dbeta uses no xhat.
        weights = {"dx": terms["dx"], "dgamma": dy64, "dbeta": dy64}
    out = {}
    for name, got, want in zip(names, grads, refs):
        reduce_len = C * (T + history_frames) if name == "dx" else B * T
        k = kappa if name != "dbeta" else torch.zeros(())
        tol = 2 * conditioned_terms_tolerance(dtype, reduce_len, weights[name], k, scales[name], dc)
        out[name] = assert_close(
            f"cln bwd {name} [{backend} {shape} {dtype} dc={dc} hist={history_frames} seed={seed}]",
            got,
            want,
            tol,
            scales[name],
        )
    return out


def check_cln_reproducible(
    backend: str, device: torch.device, shape: tuple[int, int, int], dtype: torch.dtype
) -> None:
    """Two forward + backward calls on the same inputs give bitwise the same y, dx, dgamma and
    dbeta (fixed-order reductions; ``tests/wrong/unordered_sums.py`` must fail this)."""
    gen, seed = new_generator()
    x = randn(shape, dtype, device, gen, 3.0)
    gamma = (1 + 0.5 * randn((shape[1],), torch.float32, device, gen)).to(dtype)
    beta = randn((shape[1],), dtype, device, gen)
    dy = randn(shape, dtype, device, gen)
    runs = []
    for _ in range(2):
        leaves = [t.clone().requires_grad_(True) for t in (x, gamma, beta)]
        y = common.cln(*leaves, backend=backend)
        runs.append((y.detach(), *torch.autograd.grad(y, leaves, dy)))
    where = f"[{backend} {shape} {dtype} seed={seed}]"
    for name, a, b in zip(("y", "dx", "dgamma", "dbeta"), *runs):
        assert torch.equal(a, b), f"{name} differs between two calls {where}"


def cln_reference64(
    x64: Tensor, gamma: Tensor | None, beta: Tensor | None, history: Tensor | None = None
) -> Tensor:
    """:func:`common.reference.cln_oracle`'s value by the eager backend in float64 on the CPU
    (its stable statistics; differentiable): O(T) where the oracle loops over the frames, for
    the tests of long sequences.  ``history``: earlier frames, detached (the oracle's)."""
    state = None
    if history is not None:
        _, state = common.cln(history.detach(), gamma, beta, backend="eager", return_state=True)
    return common.cln(x64, gamma, beta, backend="eager", state=state)


def _cln_stats64(x64: Tensor, eps: float = 1e-8) -> tuple[Tensor, Tensor]:
    """(mu_t, 1/sqrt(var_t + eps)) of every frame, (B, T) in float64, from the eager
    backend's stable code."""
    B, C, T = x64.shape
    out = torch.empty_like(x64)
    mean = torch.empty(B, T, dtype=torch.float64)
    rstd = torch.empty(B, T, dtype=torch.float64)
    eager.cln_forward(
        x64, None, None, eps, None, out, mean, rstd, torch.empty(B, dtype=torch.float64)
    )
    return mean, rstd


def cln_oracle_tolerance(
    x: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    dtype: torch.dtype,
    dc: float = 0.0,
    eps: float = 1e-8,
) -> tuple[Tensor, float]:
    """The float64 oracle of the cLN of ``x`` (on the CPU) and the tolerance of an output of
    it (:func:`cln_forward_tolerance`)."""
    ref = cln_oracle(x.double().cpu(), _cpu(gamma), _cpu(beta), eps=eps)
    return ref, cln_forward_tolerance(x, gamma, ref, dtype, dc)


def cln_forward_tolerance(
    x: Tensor, gamma: Tensor | None, ref: Tensor, dtype: torch.dtype, dc: float = 0.0
) -> float:
    """The cLN output tolerance for this very input: :func:`conditioned_tolerance` with
    ``kappa = |gamma_c| * |mu_t| * rstd_t`` (frames of a few nearly equal values are
    ill-conditioned whatever the kernel does)."""
    B, C, T = x.shape
    mean, rstd = _cln_stats64(x.detach().double().cpu())
    kappa = (mean.abs() * rstd)[:, None, :]
    if gamma is not None:
        kappa = kappa * gamma.detach().double().cpu().abs()[:, None]
    return conditioned_tolerance(dtype, C * T, ref, kappa, dc)


def check_frame_shift_control(
    backend: str, kernels: object, device: torch.device, dc: float, must_miss: bool = True
) -> None:
    """``CLN_FWD_SHIFT``'s negative control (``kernels``: the backend's module with the knob):
    five fresh (4, 4096, 1) float32 draws at offset ``dc``, each forward run with and without
    the shift.  Every draw: shifted within the harness's tolerance, unshifted no better.  With
    ``must_miss``: unshifted, the median draw misses the tolerance and every draw's error is 4x
    its shifted error or more (one draw alone is not a control: some pass unshifted)."""
    from bench.tune import knobs

    kind = type(kernels.CLN_FWD_SHIFT)  # the module's own knob type (cuda_ext 0 / 1, Triton bool)
    ratios, gains = [], []
    for _ in range(5):
        gen, seed = new_generator()
        x = randn((4, 4096, 1), torch.float32, device, gen, dc)
        ref, tol = cln_oracle_tolerance(x, None, None, torch.float32, dc)
        err = {}
        for shift in (False, True):
            with knobs(kernels, {"CLN_FWD_SHIFT": kind(shift)}):
                err[shift] = rel_error(common.cln(x, backend=backend), ref)
        assert err[True] <= tol, f"shifted: {err[True]:.3e} > {tol:.3e} (seed={seed})"
        assert err[False] >= err[True], (err, seed)
        ratios.append(err[False] / tol)
        gains.append(err[False] / max(err[True], 1e-300))
    if must_miss:
        assert sorted(ratios)[2] > 1.0, f"unshifted error / tolerance {ratios}: the control passed"
        assert min(gains) >= 4.0, f"unshifted / shifted error {gains}"


def cln_fwd_outputs(x: Tensor) -> tuple[Tensor, ...]:
    """NaN-poisoned outputs of a raw cLN forward (``common.kernel_api``) of float32 ``x``: (y,
    mean, rstd, the last frame's M2)."""
    B, C, T = x.shape
    nan = float("nan")
    return (
        torch.full_like(x, nan),
        torch.full((B, T), nan, device=x.device),
        torch.full((B, T), nan, device=x.device),
        torch.full((B,), nan, device=x.device),
    )


def cln_bwd_outputs(x: Tensor) -> tuple[Tensor, ...]:
    """NaN-poisoned outputs of a raw cLN backward of float32 ``x``: (dx, dgamma, dbeta)."""
    C = x.shape[1]
    nan = float("nan")
    return (
        torch.full_like(x, nan),
        torch.full((C,), nan, device=x.device),
        torch.full((C,), nan, device=x.device),
    )


def check_cln_chain_unchanged(
    kernels: object, x: Tensor, plain: contextlib.AbstractContextManager[object]
) -> None:
    """A backend's raw cLN calls (``kernels``: its module with ``cln_forward`` and
    ``cln_backward``) back to back give bitwise the outputs they give inside ``plain`` (a
    context in which the backend launches them without chaining, e.g. its ``CLN_PDL`` off),
    eagerly and replayed from a CUDA graph (on the GPU).  The chain: a forward, a forward of
    that forward's output, and a backward that reads the first forward's statistics, every
    output allocated (and NaN-poisoned) first, so that the launches follow each other
    directly; a launch that reads its input before the one writing it has finished shows.
    ``x`` may be 16-bit (dy then has its dtype; the statistics stay float32)."""
    C = x.shape[1]
    gen, seed = new_generator()
    g = torch.rand(C, generator=gen).to(x.device) + 0.5
    b = torch.randn(C, generator=gen).to(x.device)
    dy = torch.randn(x.shape, generator=gen).to(x.device, x.dtype)

    def run() -> tuple[Tensor, ...]:
        f1, f2, bw = cln_fwd_outputs(x), cln_fwd_outputs(x), cln_bwd_outputs(x)
        kernels.cln_forward(x, g, b, 1e-5, None, *f1)  # type: ignore[attr-defined]
        kernels.cln_forward(f1[0], g, b, 1e-5, None, *f2)  # type: ignore[attr-defined]
        kernels.cln_backward(dy, x, g, f1[1], f1[2], None, *bw)  # type: ignore[attr-defined]
        return *f1, *f2, *bw

    with plain:
        ref = run()
    outs = [run()]
    if x.device.type == "cuda":
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = run()
        for a in captured:
            a.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        outs.append(captured)
    assert not any(torch.isnan(r).any() for r in ref), f"NaN in the plain outputs (seed={seed})"
    for how, got in zip(("eager", "graph"), outs, strict=False):
        for i, (a, r) in enumerate(zip(got, ref, strict=True)):
            assert torch.equal(a, r), f"chained output {i} differs ({how}, seed={seed})"


def random_splits(T: int, rng: random.Random) -> list[int]:
    """Random chunk lengths summing to T, always including some of length 1."""
    sizes = []
    left = T
    while left > 0:
        s = 1 if rng.random() < 0.3 else rng.randint(1, max(1, left))
        s = min(s, left)
        sizes.append(s)
        left -= s
    return sizes


def check_cln_streaming(
    backend: str,
    device: torch.device,
    shape: tuple[int, int, int],
    dtype: torch.dtype,
    dc: float = 0.0,
) -> float:
    gen, seed = new_generator()
    rng = random.Random(seed)
    B, C, T = shape
    x = randn(shape, dtype, device, gen, dc)
    gamma, beta = _params(C, True, dtype, device, gen)
    whole = common.cln(x, gamma, beta, backend=backend)
    splits = random_splits(T, rng)
    state = None
    parts = []
    t0 = 0
    for s in splits:
        y, state = common.cln(
            x[:, :, t0 : t0 + s], gamma, beta, backend=backend, state=state, return_state=True
        )
        parts.append(y)
        t0 += s
    chunked = torch.cat(parts, -1)
    assert int(state.count[0]) == C * T
    ref, tol = cln_oracle_tolerance(x, gamma, beta, dtype, dc)
    name = f"cln streaming [{backend} {shape} {dtype} splits={splits} seed={seed}]"
    assert_close(name + " vs whole", chunked, whole, 2 * tol)
    return assert_close(name + " vs oracle", chunked, ref, tol)


def check_cln_causal(
    backend: str, device: torch.device, shape: tuple[int, int, int], dtype: torch.dtype
) -> None:
    """Changing or NaN-ing frames after t leaves outputs up to t bitwise unchanged."""
    gen, seed = new_generator()
    B, C, T = shape
    x = randn(shape, dtype, device, gen)
    gamma, beta = _params(C, True, dtype, device, gen)
    y = common.cln(x, gamma, beta, backend=backend)
    t = T // 2
    for poison in ("random", "nan"):
        x2 = x.clone()
        if poison == "nan":
            x2[:, :, t + 1 :] = float("nan")
        else:
            x2[:, :, t + 1 :] = randn((B, C, T - t - 1), dtype, device, gen, 50.0)
        y2 = common.cln(x2, gamma, beta, backend=backend)
        same = torch.equal(y[:, :, : t + 1], y2[:, :, : t + 1])
        assert same, f"cln not causal [{backend} {shape} {dtype} {poison} after t={t} seed={seed}]"


# ----------------------------------------------------------------------------- RMSNorm
def _rms_input(
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device,
    gen: torch.Generator,
    strided: bool,
) -> Tensor:
    if strided:  # rows with a stride: a column slice of a wider tensor
        wide = randn((*shape[:-1], shape[-1] + 7), dtype, device, gen)
        return wide[..., : shape[-1]]
    return randn(shape, dtype, device, gen)


def check_rmsnorm_forward(
    backend: str,
    device: torch.device,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    weight: bool = True,
    strided: bool = False,
    weight_dtype: torch.dtype | None = None,
) -> float:
    gen, seed = new_generator()
    x = _rms_input(shape, dtype, device, gen, strided)
    w = (1 + 0.5 * randn((shape[-1],), weight_dtype or dtype, device, gen)) if weight else None
    y = common.rmsnorm(x, w, backend=backend)
    assert y.dtype == dtype and y.shape == x.shape
    ref = rmsnorm_oracle(x.double().cpu(), _cpu(w))
    tol = tolerance(dtype, shape[-1])
    name = f"rmsnorm fwd [{backend} {shape} {dtype} strided={strided} seed={seed}]"
    return assert_close(name, y, ref, tol)


def check_rmsnorm_backward(
    backend: str,
    device: torch.device,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    weight: bool = True,
    strided: bool = False,
) -> dict[str, float]:
    gen, seed = new_generator()
    x = _rms_input(shape, dtype, device, gen, strided).requires_grad_(True)
    w = (1 + 0.5 * randn((shape[-1],), dtype, device, gen)).requires_grad_(True) if weight else None
    dy = randn(shape, dtype, device, gen)
    y = common.rmsnorm(x, w, backend=backend)
    grads = torch.autograd.grad(y, [t for t in (x, w) if t is not None], dy)
    x64 = x.detach().double().cpu().requires_grad_(True)
    w64 = _cpu(w, grad=True)
    ref = rmsnorm_oracle(x64, w64)
    refs = torch.autograd.grad(ref, [t for t in (x64, w64) if t is not None], dy.double().cpu())
    rows = x.numel() // shape[-1]
    # dx = r * (g - xhat * mean(g * xhat)): judged against |r * g|; dw, a sum over the rows of
    # dy * xhat whose signs can cancel (N = 1: xhat = +-1), against the terms' norm.
    with torch.no_grad():
        r = (x64.detach().square().mean(-1, keepdim=True) + 1e-6).rsqrt()
        dy64 = dy.double().cpu()
        g = dy64 * (1.0 if w64 is None else w64.detach())
        scales = {"dx": (r * g).norm().item(), "dw": (dy64 * x64.detach() * r).norm().item()}
    out = {}
    for name, got, want in zip(["dx", "dw"], grads, refs):
        n = shape[-1] if name == "dx" else rows
        out[name] = assert_close(
            f"rmsnorm bwd {name} [{backend} {shape} {dtype} strided={strided} seed={seed}]",
            got,
            want,
            2 * tolerance(dtype, n),
            scales[name],
        )
    return out


def _cpu(t: Tensor | None, grad: bool = False) -> Tensor | None:
    if t is None:
        return None
    out = t.detach().double().cpu()
    return out.requires_grad_(True) if grad else out
