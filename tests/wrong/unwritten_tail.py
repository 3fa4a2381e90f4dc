"""Wrong: correct math, but the last frame / last row is never written."""

from __future__ import annotations

import torch

from common import eager
from common.eager import cln_backward, rmsnorm_backward  # noqa: F401


def cln_forward(x, gamma, beta, eps, state, y, mean, rstd, m2_last, mean_last=None):
    full = torch.empty_like(y)
    eager.cln_forward(x, gamma, beta, eps, state, full, mean, rstd, m2_last, mean_last)
    y[..., :-1].copy_(full[..., :-1])


def rmsnorm_forward(x, weight, eps, y, rstd):
    full = torch.empty_like(y)
    eager.rmsnorm_forward(x, weight, eps, full, rstd)
    y[:-1].copy_(full[:-1])
