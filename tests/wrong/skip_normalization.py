"""Wrong: returns x * gamma + beta without normalizing (stats are plausible)."""

from __future__ import annotations

from common.eager import cln_backward, rmsnorm_backward  # noqa: F401  (right backward)


def cln_forward(x, gamma, beta, eps, state, y, mean, rstd, m2_last, mean_last=None):
    out = x.float()
    if gamma is not None:
        out = out * gamma.float()[:, None]
    if beta is not None:
        out = out + beta.float()[:, None]
    y.copy_(out)
    if mean is not None:
        mean.zero_()
        rstd.fill_(1.0)
    if mean_last is not None:
        mean_last.zero_()
    m2_last.fill_(1.0)


def rmsnorm_forward(x, weight, eps, y, rstd):
    y.copy_(x if weight is None else x * weight)
    rstd.fill_(1.0)
