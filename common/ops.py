"""The kernels as torch custom ops (``normkernels::*``), for code that ``torch.compile`` traces.

Called eagerly, :func:`common.cln` and :func:`common.rmsnorm` run their kernels through the
``torch.autograd.Function`` classes of :mod:`common.api` (the least host time per call).  While
``torch.compile`` traces them (``torch.compiler.is_compiling()``) they call these ops instead:
Dynamo and AOTAutograd see each as one opaque op with a shape-only fake implementation and a
registered backward, so a model using the norms compiles without a graph break and the kernels
run exactly as they do eagerly (the same launches, the same bits).  Both paths share the bodies
in :mod:`common.api` (``cln_forward_impl`` and its siblings).

A custom op cannot return ``None`` or an output that aliases another, so optional outputs come
back as empty tensors and the state's mean as a copy.  The backend travels by name.
"""

# No ``from __future__ import annotations``: torch.library reads the signatures' annotations
# as types to infer each op's schema.
from typing import Optional

import torch
from torch import Tensor

from common.api import (
    cln_backward_impl,
    cln_forward_impl,
    param_dtypes,
    rms_backward_impl,
    rms_forward_impl,
    to_param_dtypes,
)
from common.kernel_api import acc_dtype
from common.registry import get_backend


def _none_as_empty(t: Optional[Tensor], like: Tensor) -> Tensor:
    return like.new_empty((0,)) if t is None else t


# --------------------------------------------------------------------------- cLN
@torch.library.custom_op("normkernels::cln_fwd", mutates_args=())
def cln_fwd(
    x: Tensor,
    gamma: Optional[Tensor],
    beta: Optional[Tensor],
    eps: float,
    backend: str,
    count: Optional[Tensor],
    mean0: Optional[Tensor],
    m2_0: Optional[Tensor],
    stats: bool,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(y, mean, rstd, mean_last, m2_last); mean and rstd empty unless ``stats``."""
    y, mean, rstd, mean_last, m2_last = cln_forward_impl(
        x, gamma, beta, eps, get_backend(backend), count, mean0, m2_0, stats
    )
    acc = torch.empty(0, dtype=acc_dtype(x.dtype), device=x.device)
    if mean is not None:
        mean_last = mean_last.clone()  # a view of mean: an op's outputs may not alias
    return y, _none_as_empty(mean, acc), _none_as_empty(rstd, acc), mean_last, m2_last


@cln_fwd.register_fake
def _(x, gamma, beta, eps, backend, count, mean0, m2_0, stats):
    B, C, T = x.shape
    acc = acc_dtype(x.dtype)
    frames = (B, T) if stats else (0,)
    return (
        x.new_empty((B, C, T)),
        x.new_empty(frames, dtype=acc),
        x.new_empty(frames, dtype=acc),
        x.new_empty((B,), dtype=acc),
        x.new_empty((B,), dtype=acc),
    )


@torch.library.custom_op("normkernels::cln_bwd", mutates_args=())
def cln_bwd(
    dy: Tensor,
    x: Tensor,
    gamma: Optional[Tensor],
    mean: Tensor,
    rstd: Tensor,
    count: Optional[Tensor],
    backend: str,
    need_dgamma: bool,
    need_dbeta: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """(dx, dgamma, dbeta) in the accumulation dtype; a gradient not asked for is empty."""
    dx, dgamma, dbeta = cln_backward_impl(
        dy, x, gamma, mean, rstd, count, get_backend(backend), need_dgamma, need_dbeta
    )
    acc = torch.empty(0, dtype=acc_dtype(x.dtype), device=x.device)
    return dx, _none_as_empty(dgamma, acc), _none_as_empty(dbeta, acc)


@cln_bwd.register_fake
def _(dy, x, gamma, mean, rstd, count, backend, need_dgamma, need_dbeta):
    C = x.shape[1]
    acc = acc_dtype(x.dtype)
    return (
        x.new_empty(x.shape),
        x.new_empty((C,) if need_dgamma else (0,), dtype=acc),
        x.new_empty((C,) if need_dbeta else (0,), dtype=acc),
    )


def _cln_setup(ctx, inputs, output) -> None:
    x, gamma, beta, _eps, backend, count, _mean0, _m2_0, stats = inputs
    _y, mean, rstd, _mean_last, _m2_last = output
    ctx.backend, ctx.stats = backend, stats
    ctx.param_dtypes = param_dtypes(gamma, beta)
    ctx.save_for_backward(x, gamma, mean, rstd, count)


def _cln_backward(ctx, dy, _dmean, _drstd, _dmean_last, _dm2):
    x, gamma, mean, rstd, count = ctx.saved_tensors
    if not ctx.stats:  # cln() asks for the statistics whenever an input needs a gradient
        raise RuntimeError("cln: backward through a forward that kept no statistics")
    need = ctx.needs_input_grad
    dx, dgamma, dbeta = cln_bwd(dy, x, gamma, mean, rstd, count, ctx.backend, need[1], need[2])
    grads = (dgamma if need[1] else None, dbeta if need[2] else None)  # not asked for: empty
    dgamma, dbeta = to_param_dtypes(grads, ctx.param_dtypes)
    return (dx if need[0] else None), dgamma, dbeta, None, None, None, None, None, None


cln_fwd.register_autograd(_cln_backward, setup_context=_cln_setup)


# --------------------------------------------------------------------------- RMSNorm
@torch.library.custom_op("normkernels::rms_fwd", mutates_args=())
def rms_fwd(
    x2: Tensor, weight: Optional[Tensor], eps: float, backend: str
) -> tuple[Tensor, Tensor]:
    """(y, rstd) of the (M, N) rows ``x2``."""
    return rms_forward_impl(x2, weight, eps, get_backend(backend))


@rms_fwd.register_fake
def _(x2, weight, eps, backend):
    M, N = x2.shape
    return x2.new_empty((M, N)), x2.new_empty((M,), dtype=acc_dtype(x2.dtype))


@torch.library.custom_op("normkernels::rms_bwd", mutates_args=())
def rms_bwd(
    dy: Tensor, x2: Tensor, weight: Optional[Tensor], rstd: Tensor, backend: str, need_dw: bool
) -> tuple[Tensor, Tensor]:
    """(dx, dw), dw in the accumulation dtype (empty unless ``need_dw``)."""
    dx, dw = rms_backward_impl(dy, x2, weight, rstd, get_backend(backend), need_dw)
    return dx, _none_as_empty(dw, torch.empty(0, dtype=acc_dtype(x2.dtype), device=x2.device))


@rms_bwd.register_fake
def _(dy, x2, weight, rstd, backend, need_dw):
    M, N = x2.shape
    return x2.new_empty((M, N)), x2.new_empty((N,) if need_dw else (0,), dtype=acc_dtype(x2.dtype))


def _rms_setup(ctx, inputs, output) -> None:
    x2, weight, _eps, backend = inputs
    ctx.backend = backend
    ctx.save_for_backward(x2, weight, output[1])


def _rms_backward(ctx, dy, _drstd):
    x2, weight, rstd = ctx.saved_tensors
    need = ctx.needs_input_grad
    need_dw = need[1] and weight is not None
    dx, dw = rms_bwd(dy, x2, weight, rstd, ctx.backend, need_dw)
    return (dx if need[0] else None), (dw.to(weight.dtype) if need_dw else None), None, None


rms_fwd.register_autograd(_rms_backward, setup_context=_rms_setup)
