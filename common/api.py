"""The public functional interface: validation, backend choice, autograd.

Everything here is written once for all backends; a backend supplies only the
raw kernels of :mod:`common.kernel_api`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from common.kernel_api import acc_dtype
from common.registry import BackendSpec, UnsupportedError, check_support, select_backend

# --------------------------------------------------------------------------- poisoning
_POISON = os.environ.get("NORM_POISON") == "1"


def set_poison(enabled: bool) -> None:
    """Fill every output buffer with NaN before a kernel writes it (for tests).

    A kernel that leaves an element unwritten then fails the closeness check
    instead of passing on stale memory.
    """
    global _POISON
    _POISON = bool(enabled)


def _out(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> Tensor:
    if _POISON:
        return torch.full(shape, math.nan, dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


def _on_device(device: torch.device) -> contextlib.AbstractContextManager[object]:
    """Make the input's GPU current (a no-op, and no guard object, when it already is)."""
    if device.type == "cuda" and device.index != torch.cuda.current_device():
        return torch.cuda.device(device)
    return contextlib.nullcontext()


# --------------------------------------------------------------------------- state
@dataclass(frozen=True)
class ClnState:
    """Cumulative statistics of everything a cLN has seen so far, per batch item.

    ``count`` int64 ``(B,)``: values seen (channels x frames); ``mean`` and
    ``m2`` ``(B,)`` in float32 (float64 for float64 input): their mean and sum
    of squared deviations.  Pass it as ``state=`` with the next chunk.
    Gradients do not flow through it (it is detached).
    """

    count: Tensor
    mean: Tensor
    m2: Tensor

    @classmethod
    def initial(
        cls, batch: int, *, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
    ) -> ClnState:
        """The state of sequences that have seen nothing yet."""
        acc = acc_dtype(dtype)
        z = torch.zeros(batch, dtype=acc, device=device)
        return cls(torch.zeros(batch, dtype=torch.int64, device=device), z, z.clone())

    @property
    def variance(self) -> Tensor:
        """Biased variance of everything seen so far."""
        return self.m2 / self.count.clamp_min(1).to(self.m2.dtype)

    def to(self, device: torch.device | str) -> ClnState:
        return ClnState(self.count.to(device), self.mean.to(device), self.m2.to(device))

    def __len__(self) -> int:
        return self.count.shape[0]

    def __getitem__(self, index: int | slice | Sequence[int] | Tensor) -> ClnState:
        """The state of some of the sequences, in the order given (a streaming server whose
        streams end at different times keeps the rest: ``state[keep]``). An int keeps its
        batch dim: ``state[i]`` is the state of a batch of one."""
        if isinstance(index, int):
            index = [index]
        return ClnState(self.count[index], self.mean[index], self.m2[index])

    @staticmethod
    def cat(states: Sequence[ClnState]) -> ClnState:
        """The states of several batches as one (streams joining a batch), in order."""
        if not states:
            raise ValueError("ClnState.cat needs at least one state")
        return ClnState(
            torch.cat([s.count for s in states]),
            torch.cat([s.mean for s in states]),
            torch.cat([s.m2 for s in states]),
        )


# --------------------------------------------------------------------------- checks
def _check_tensor(name: str, t: object) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    return t


_FUNCTORCH_WRAPPED = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)


def _check_untransformed(op: str, *tensors: Tensor | None) -> None:
    """Refuse the inputs of a ``torch.func`` transform (vmap, grad, jacrev, ...) with a clear
    error: the kernels take plain tensors (under vmap they failed deep inside with "Cannot
    access storage of BatchedTensorImpl", or in the eager backend an in-place shape error).
    Eager calls only: while torch.compile traces, the inputs are FakeTensors and the check
    would break the graph."""
    wrapped = _FUNCTORCH_WRAPPED
    if wrapped is not None and any(t is not None and wrapped(t) for t in tensors):
        raise NotImplementedError(
            f"{op} does not support torch.func transforms (vmap, grad, jacrev, ...): its "
            "kernels take plain tensors. Call it outside the transform (torch.autograd for "
            "gradients; a loop, or the batch dimension, instead of vmap)"
        )


def _check_param(name: str, p: Tensor | None, size: int, x: Tensor, what: str) -> None:
    if p is None:
        return
    _check_tensor(name, p)
    if p.dim() != 1 or p.shape[0] != size:
        raise ValueError(f"{name} must have shape ({size},) to match {what}, got {tuple(p.shape)}")
    if p.device != x.device:
        raise ValueError(f"{name} is on {p.device} but x is on {x.device}")


def _check_eps(eps: float) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0.0:
        raise ValueError(f"eps must be a positive number, got {eps!r}")
    return float(eps)


def _kernel_param(p: Tensor | None, x: Tensor) -> Tensor | None:
    """Parameters reach kernels in x.dtype or the acc dtype, contiguous."""
    if p is None:
        return None
    if p.dtype not in (x.dtype, acc_dtype(x.dtype)):
        p = p.to(acc_dtype(x.dtype))
    return p.contiguous()


def _needs_grad(*ts: Tensor | None) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in ts)


def _empty_output(x: Tensor, params: tuple[Tensor | None, ...], shape: tuple[int, ...]) -> Tensor:
    """The output of an empty ``x``: a copy, joined to the graph of every parameter that
    requires grad (each added in ``shape``, broadcast over no values), so that a backward
    gives them zero gradients as ``F.rms_norm`` and ``F.group_norm`` do, instead of None
    (which an optimizer skips and DDP reports as an unused parameter) or no graph at all
    when only the parameters require grad."""
    y = x.clone()
    if torch.is_grad_enabled():
        for p in params:
            if p is not None and p.requires_grad:
                y = y + p.to(x.dtype).view(shape)
    return y


def _resolve(
    backend: str | None,
    op: str,
    dtype: torch.dtype,
    device: torch.device,
    bwd_op: str | None,
    streaming: bool,
) -> BackendSpec:
    """The backend of one call (:func:`select_backend`), checked for the backward op that will
    follow (``bwd_op``) and for a streaming state, before any kernel runs."""
    spec = select_backend(backend, op, dtype, device)
    if streaming and not spec.streaming:
        raise UnsupportedError(f"backend {spec.name!r} does not support streaming state")
    if bwd_op is not None:
        check_support(spec, bwd_op, dtype, device)
    return spec


@torch.compiler.assume_constant_result
def _resolve_name(
    backend: str | None,
    op: str,
    dtype: torch.dtype,
    device: torch.device,
    bwd_op: str | None,
    streaming: bool,
) -> str:
    """:func:`_resolve`'s backend name, for a graph ``torch.compile`` traces: run once while
    tracing (the registry's lookups, locks and probes are not traceable), a constant in the
    graph, which passes it to the custom ops of :mod:`common.ops`."""
    return _resolve(backend, op, dtype, device, bwd_op, streaming).name


# --------------------------------------------------------------------------- cLN
def cln_forward_impl(
    x: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    eps: float,
    spec: BackendSpec,
    count: Tensor | None,
    mean0: Tensor | None,
    m2_0: Tensor | None,
    stats: bool,
) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor, Tensor]:
    """One cLN forward through ``spec``'s kernels: (y, mean, rstd, mean_last, m2_last), the
    per-frame mean and rstd only with ``stats`` (else None).  ``mean_last`` is then a view of
    ``mean``'s last frame."""
    B, C, T = x.shape
    acc = acc_dtype(x.dtype)
    y = _out((B, C, T), x.dtype, x.device)
    # The per-frame statistics only feed the backward: without one to follow, the kernel
    # neither writes them (2 x 4 bytes a frame) nor keeps its schedule fit for a backward,
    # and writes the state's mean alone.  With them, that mean is their last frame's.
    m2_last = _out((B,), acc, x.device)
    if stats:
        mean, rstd = _out((B, T), acc, x.device), _out((B, T), acc, x.device)
        mean_last = None
    else:
        mean = rstd = None
        mean_last = _out((B,), acc, x.device)
    state = None if count is None else (count, mean0, m2_0)
    with _on_device(x.device):
        spec.kernels().cln_forward(
            x, gamma, beta, eps, state, y, mean, rstd, m2_last, mean_last=mean_last
        )
    if mean_last is None:
        mean_last = mean[:, -1]  # type: ignore[index]  # a view: no copy unless the state is asked
    return y, mean, rstd, mean_last, m2_last


def cln_backward_impl(
    dy: Tensor,
    x: Tensor,
    gamma: Tensor | None,
    mean: Tensor,
    rstd: Tensor,
    count: Tensor | None,
    spec: BackendSpec,
    need_dgamma: bool,
    need_dbeta: bool,
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """One cLN backward through ``spec``'s kernels: (dx, dgamma, dbeta), the parameter
    gradients in the accumulation dtype and only where asked (else None)."""
    acc = acc_dtype(x.dtype)  # cln_bwd support was checked before the forward ran
    C = x.shape[1]
    dx = _out(tuple(x.shape), x.dtype, x.device)
    dgamma = _out((C,), acc, x.device) if need_dgamma else None
    dbeta = _out((C,), acc, x.device) if need_dbeta else None
    with _on_device(x.device):
        spec.kernels().cln_backward(dy.contiguous(), x, gamma, mean, rstd, count, dx, dgamma, dbeta)
    return dx, dgamma, dbeta


def param_dtypes(gamma: Tensor | None, beta: Tensor | None) -> tuple[torch.dtype | None, ...]:
    """The dtypes of gamma and beta as the kernels got them (None where absent): their
    gradients' dtypes."""
    return (None if gamma is None else gamma.dtype, None if beta is None else beta.dtype)


def to_param_dtypes(
    grads: tuple[Tensor | None, Tensor | None], dtypes: tuple[torch.dtype | None, ...]
) -> tuple[Tensor | None, ...]:
    """dgamma and dbeta from the accumulation dtype to their parameters' (None stays None)."""
    return tuple(g if g is None or dt is None else g.to(dt) for g, dt in zip(grads, dtypes))


def _first_order_only(op: str) -> Callable[[Callable[..., tuple]], Callable[..., tuple]]:
    """torch's ``once_differentiable`` for a backward whose result depends on the saved inputs.

    ``once_differentiable`` marks its results as non-differentiable only where an incoming
    gradient requires grad.  With ``create_graph=True`` and an incoming gradient that does not
    (``d(loss)/dy`` of a loss linear in y, as in a gradient penalty), the gradients came back
    without a ``grad_fn``, and a second backward dropped this op's second-order terms silently
    (a cLN gradient penalty: -2.25 where the float64 formula gives -1.29;
    ``tests/test_errors.py::test_double_backward_raises``).  Here every result of a backward
    run with grad mode on (``create_graph=True``) is tied to a node that raises when it is
    differentiated; plain first-order use is unchanged.
    """
    msg = (
        f"{op}: double backward is not supported: its backward kernels are not differentiable, "
        "so the gradient of a gradient through it (autograd.grad(..., create_graph=True) "
        "followed by another backward, e.g. a gradient penalty) cannot be formed"
    ).encode()

    def deco(fn: Callable[..., tuple]) -> Callable[..., tuple]:
        @functools.wraps(fn)
        def wrapper(ctx: object, *grads: Tensor | None) -> tuple:
            with torch.no_grad():
                outs = fn(ctx, *grads)
            if not torch.is_grad_enabled() or all(o is None for o in outs):
                return outs
            from torch._C import _functions  # what once_differentiable itself uses

            err = _functions.DelayedError(msg, len(outs))
            return err(*(None if o is None else o.detach().requires_grad_() for o in outs))

        return wrapper

    return deco


class _ClnFunction(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx,
        x: Tensor,
        gamma: Tensor | None,
        beta: Tensor | None,
        eps: float,
        spec: BackendSpec,
        count: Tensor | None,
        mean0: Tensor | None,
        m2_0: Tensor | None,
        stats: bool,
    ) -> tuple[Tensor, Tensor, Tensor]:
        y, mean, rstd, mean_last, m2_last = cln_forward_impl(
            x, gamma, beta, eps, spec, count, mean0, m2_0, stats
        )
        ctx.spec = spec
        ctx.param_dtypes = param_dtypes(gamma, beta)
        ctx.save_for_backward(x, gamma, mean, rstd, count)
        ctx.mark_non_differentiable(mean_last, m2_last)
        # The state's outputs never get a gradient: without this the engine would allocate and
        # zero-fill one for each of them on every backward (two more launches).
        ctx.set_materialize_grads(False)
        return y, mean_last, m2_last

    @staticmethod
    @_first_order_only("cln")
    def backward(ctx, dy: Tensor | None, _dmean: Tensor, _dm2: Tensor):  # type: ignore[override]
        if dy is None:  # no gradient reached y (it can reach nothing else)
            return (None,) * 9
        x, gamma, mean, rstd, count = ctx.saved_tensors
        if mean is None:  # cln() asks for the statistics whenever an input needs a gradient
            raise RuntimeError("cln: backward through a forward that kept no statistics")
        dx, dgamma, dbeta = cln_backward_impl(
            dy, x, gamma, mean, rstd, count, ctx.spec, ctx.needs_input_grad[1],
            ctx.needs_input_grad[2],
        )  # fmt: skip
        dgamma, dbeta = to_param_dtypes((dgamma, dbeta), ctx.param_dtypes)
        if not ctx.needs_input_grad[0]:
            dx = None
        return dx, dgamma, dbeta, None, None, None, None, None, None


def cln(
    x: Tensor,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    eps: float = 1e-8,
    *,
    backend: str | None = None,
    state: ClnState | None = None,
    return_state: bool = False,
) -> Tensor | tuple[Tensor, ClnState]:
    """Cumulative (causal) layer norm of ``x`` of shape ``(B, C, T)``.

    For every batch item and frame t the statistics run over all channels and
    all frames up to and including t (Conv-TasNet's cLN).  ``state`` carries
    the statistics of earlier chunks of the same sequences (``None``: the
    sequences start here); with ``return_state=True`` the new state is
    returned too, so feeding chunks one after another equals one call on the
    whole sequence.  Differentiable in ``x``, ``gamma`` and ``beta``.  When
    no input needs a gradient (``torch.no_grad``, inference) the kernels keep
    no per-frame statistics for a backward, and may schedule the forward for
    being alone (Triton paces its float32 forward then).  Works inside
    ``torch.compile`` (the kernels as the custom ops of :mod:`common.ops`).
    """
    x = _check_tensor("x", x)
    if x.dim() != 3:
        raise ValueError(
            f"cln expects x of shape (B, C, T) (channels first, time last), got "
            f"{x.dim()}-d shape {tuple(x.shape)}"
        )
    B, C, T = x.shape
    if C == 0:
        raise ValueError("cln needs at least one channel (C >= 1), got C = 0")
    _check_param("gamma", gamma, C, x, f"C = {C} channels of x")
    _check_param("beta", beta, C, x, f"C = {C} channels of x")
    eps = _check_eps(eps)
    acc = acc_dtype(x.dtype)
    if state is not None:
        if not isinstance(state, ClnState):
            raise TypeError(f"state must be a common.ClnState, got {type(state).__name__}")
        for fname in ("count", "mean", "m2"):
            t = getattr(state, fname)
            if not isinstance(t, Tensor) or tuple(t.shape) != (B,):
                raise ValueError(f"state.{fname} must have shape ({B},) to match x's batch size")
            if t.device != x.device:
                raise ValueError(f"state.{fname} is on {t.device} but x is on {x.device}")
    compiling = torch.compiler.is_compiling()
    if not compiling:
        states = () if state is None else (state.count, state.mean, state.m2)
        _check_untransformed("cln", x, gamma, beta, *states)

    stats = _needs_grad(x, gamma, beta)
    resolve = _resolve_name if compiling else _resolve
    bwd = "cln_bwd" if stats else None
    spec = resolve(backend, "cln_fwd", x.dtype, x.device, bwd, state is not None)

    if B == 0 or T == 0:
        y = _empty_output(x, (gamma, beta), (1, C, 1))  # empty: nothing to normalize
        new_state = (
            state if state is not None else ClnState.initial(B, device=x.device, dtype=x.dtype)
        )
        return (y, new_state) if return_state else y

    count = mean0 = m2_0 = None
    if state is not None:
        count = state.count.detach().to(torch.int64).contiguous()
        mean0 = state.mean.detach().to(acc).contiguous()
        m2_0 = state.m2.detach().to(acc).contiguous()

    args = (x.contiguous(), _kernel_param(gamma, x), _kernel_param(beta, x), eps)
    if compiling:  # inside a torch.compile graph: the opaque custom op (spec: the name)
        from common import ops

        y, _, _, mean_last, m2_last = ops.cln_fwd(*args, spec, count, mean0, m2_0, stats)
    elif stats:
        y, mean_last, m2_last = _ClnFunction.apply(*args, spec, count, mean0, m2_0, stats)
    else:  # nothing to differentiate: no autograd node (its apply costs host time)
        y, _, _, mean_last, m2_last = cln_forward_impl(*args, spec, count, mean0, m2_0, stats)
    if not return_state:
        return y
    prev = count if count is not None else torch.zeros(B, dtype=torch.int64, device=x.device)
    # With statistics, mean_last is a view of their last frame: cloned, not to pin all of them.
    mean_state = mean_last.detach().clone() if stats else mean_last.detach()
    new_state = ClnState(prev + C * T, mean_state, m2_last.detach())
    return y, new_state


# --------------------------------------------------------------------------- RMSNorm
def rms_forward_impl(
    x2: Tensor, weight: Tensor | None, eps: float, spec: BackendSpec
) -> tuple[Tensor, Tensor]:
    """One RMSNorm forward of the (M, N) rows ``x2`` through ``spec``'s kernels: (y, rstd)."""
    M, N = x2.shape
    y = _out((M, N), x2.dtype, x2.device)
    rstd = _out((M,), acc_dtype(x2.dtype), x2.device)
    with _on_device(x2.device):
        spec.kernels().rmsnorm_forward(x2, weight, eps, y, rstd)
    return y, rstd


def rms_backward_impl(
    dy: Tensor, x2: Tensor, weight: Tensor | None, rstd: Tensor, spec: BackendSpec, need_dw: bool
) -> tuple[Tensor, Tensor | None]:
    """One RMSNorm backward through ``spec``'s kernels: (dx, dw), dw in the accumulation dtype
    and only where asked (else None)."""
    M, N = x2.shape  # rmsnorm_bwd support was checked before the forward ran
    dx = _out((M, N), x2.dtype, x2.device)
    dw = _out((N,), acc_dtype(x2.dtype), x2.device) if need_dw else None
    with _on_device(x2.device):
        spec.kernels().rmsnorm_backward(dy.contiguous(), x2, weight, rstd, dx, dw)
    return dx, dw


class _RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx, x2: Tensor, weight: Tensor | None, eps: float, spec: BackendSpec
    ) -> Tensor:
        y, rstd = rms_forward_impl(x2, weight, eps, spec)
        ctx.spec = spec
        ctx.save_for_backward(x2, weight, rstd)
        return y

    @staticmethod
    @_first_order_only("rmsnorm")
    def backward(ctx, dy: Tensor):  # type: ignore[override]
        x2, weight, rstd = ctx.saved_tensors
        dx, dw = rms_backward_impl(dy, x2, weight, rstd, ctx.spec, ctx.needs_input_grad[1])
        if dw is not None and weight is not None:
            dw = dw.to(weight.dtype)
        return (dx if ctx.needs_input_grad[0] else None), dw, None, None


def _as_rows(x: Tensor) -> Tensor:
    """View ``x`` (..., N) as (M, N) rows with a unit last stride, copying only if needed."""
    N = x.shape[-1]
    if x.dim() == 1:
        x = x.unsqueeze(0)
    if x.stride(-1) != 1:
        x = x.contiguous()
    if x.dim() == 2:
        rows = x
    else:
        try:
            rows = x.view(-1, N)
        except RuntimeError:  # leading dims not mergeable into one stride
            rows = x.reshape(-1, N)
    if rows.shape[0] > 1 and rows.stride(0) < N:
        rows = rows.contiguous()  # overlapping or broadcast rows
    return rows


def rmsnorm(
    x: Tensor,
    weight: Tensor | None = None,
    eps: float = 1e-6,
    *,
    backend: str | None = None,
) -> Tensor:
    """RMSNorm over the last dim of ``x`` (``(..., N)``), differentiable in x and weight.

    Rows with a stride (last dim contiguous) are passed to the kernels without
    a copy.  Works inside ``torch.compile`` (the custom ops of :mod:`common.ops`).
    """
    x = _check_tensor("x", x)
    if x.dim() < 1:
        raise ValueError("rmsnorm expects x of shape (..., N) with at least one dim, got a scalar")
    N = x.shape[-1]
    if N == 0:
        raise ValueError("rmsnorm needs a non-empty last dim (N >= 1), got N = 0")
    _check_param("weight", weight, N, x, f"the last dim N = {N} of x")
    eps = _check_eps(eps)
    compiling = torch.compiler.is_compiling()
    if not compiling:
        _check_untransformed("rmsnorm", x, weight)
    resolve = _resolve_name if compiling else _resolve
    bwd = "rmsnorm_bwd" if _needs_grad(x, weight) else None
    spec = resolve(backend, "rmsnorm_fwd", x.dtype, x.device, bwd, False)
    if x.numel() == 0:
        return _empty_output(x, (weight,), (N,))  # empty: nothing to normalize
    rows = _as_rows(x)
    w = _kernel_param(weight, x)
    if compiling:  # inside a torch.compile graph: the opaque custom op (spec: the name)
        from common import ops

        y = ops.rms_fwd(rows, w, eps, spec)[0]
    elif bwd is not None:
        y = _RMSNormFunction.apply(rows, w, eps, spec)
    else:  # nothing to differentiate: no autograd node (its apply costs host time)
        y = rms_forward_impl(rows, w, eps, spec)[0]
    return y.view(x.shape)
