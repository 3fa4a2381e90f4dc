"""Wrong: forward right, backward drops the mean/variance terms (dx = r * g)."""

from __future__ import annotations

from common.eager import cln_forward, rmsnorm_forward  # noqa: F401


def cln_backward(dy, x, gamma, mean, rstd, count, dx, dgamma, dbeta):
    g = dy.float() * (gamma.float()[:, None] if gamma is not None else 1.0)
    dx.copy_(g * rstd[:, None, :])
    xhat = (x.float() - mean[:, None, :]) * rstd[:, None, :]
    if dgamma is not None:
        dgamma.copy_((dy.float() * xhat).sum((0, 2)))
    if dbeta is not None:
        dbeta.copy_(dy.float().sum((0, 2)))


def rmsnorm_backward(dy, x, weight, rstd, dx, dw):
    g = dy.float() * (weight.float() if weight is not None else 1.0)
    dx.copy_(g * rstd[:, None])
    if dw is not None:
        dw.copy_((dy.float() * x.float() * rstd[:, None]).sum(0))
