"""Wrong: cLN with E[x^2] - E[x]^2 (cancels with a DC offset); else correct."""

from __future__ import annotations

from common.eager import cln_backward, rmsnorm_backward, rmsnorm_forward  # noqa: F401
from common.peers import cln_cumsum_eager


def cln_forward(x, gamma, beta, eps, state, y, mean, rstd, m2_last, mean_last=None):
    if state is not None:
        raise NotImplementedError
    y.copy_(cln_cumsum_eager(x, gamma, beta, eps))
    B, C, T = x.shape
    xf = x.float()
    cnt = C * (1 + __import__("torch").arange(T, dtype=xf.dtype))
    s1 = xf.sum(1).cumsum(-1)
    s2 = xf.square().sum(1).cumsum(-1)
    var = s2 / cnt - (s1 / cnt) ** 2
    if mean is not None:
        mean.copy_(s1 / cnt)
        rstd.copy_((var + eps).rsqrt())
    if mean_last is not None:
        mean_last.copy_(s1[:, -1] / cnt[-1])
    m2_last.copy_(var[:, -1] * cnt[-1])
