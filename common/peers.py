"""What users write instead: the eager formulas found in the wild.

They are benchmark peers (eager and under ``torch.compile``) and the tests'
demonstration of why the stable combine matters.  They are deliberately *not*
the project's references (see :mod:`common.reference`).
"""

from __future__ import annotations

import torch
from torch import Tensor


def cln_cumsum_eager(
    x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None, eps: float = 1e-8
) -> Tensor:
    """Asteroid / Conv-TasNet style cLN: cumulative sums and E[x^2] - E[x]^2.

    Fast to write, but the variance cancels catastrophically with a DC offset
    (float32, offset 1000: relative error about 0.2).
    """
    B, C, T = x.shape
    step_sum = x.sum(1, keepdim=True)
    step_pow_sum = x.pow(2).sum(1, keepdim=True)
    cum_sum = torch.cumsum(step_sum, dim=-1)
    cum_pow_sum = torch.cumsum(step_pow_sum, dim=-1)
    cnt = torch.arange(C, C * (T + 1), C, dtype=x.dtype, device=x.device).view(1, 1, -1)
    cum_mean = cum_sum / cnt
    cum_var = (cum_pow_sum / cnt - cum_mean.pow(2)).clamp_min(0)
    y = (x - cum_mean) / (cum_var + eps).sqrt()
    if gamma is not None:
        y = y * gamma.view(1, -1, 1)
    if beta is not None:
        y = y + beta.view(1, -1, 1)
    return y


def rmsnorm_eager(x: Tensor, weight: Tensor | None = None, eps: float = 1e-6) -> Tensor:
    """The usual LLaMA-style RMSNorm one-liner (statistics in float32)."""
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return y * weight if weight is not None else y
