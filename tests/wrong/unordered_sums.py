"""Wrong: dgamma / dbeta summed in an order that changes from call to call (as float atomics
or a reduction that follows the timing would), the values right to rounding.  The gradient
checks pass it; only the reproducibility check (``harness.check_cln_reproducible``) can fail
it.  Each call takes the next seed, so the test's outcome is itself reproducible."""

from __future__ import annotations

import itertools

import torch

from common import eager
from common.eager import cln_forward, rmsnorm_backward, rmsnorm_forward  # noqa: F401

_calls = itertools.count(1)


def _unordered_sum(v: torch.Tensor) -> torch.Tensor:
    """Per channel, the (B, C, T) values summed over (B, T) one after another in float32, in a
    random order of the B * T terms."""
    terms = v.float().permute(1, 0, 2).reshape(v.shape[1], -1)
    perm = torch.randperm(terms.shape[1], generator=torch.Generator().manual_seed(next(_calls)))
    # A float32 add per term (torch.cumsum / sum on the CPU accumulate floats in double, and
    # would round every order to the same bits).
    acc = torch.zeros(terms.shape[0], dtype=torch.float32, device=terms.device)
    for i in perm.tolist():
        acc = acc + terms[:, i]
    return acc


def cln_backward(dy, x, gamma, mean, rstd, count, dx, dgamma, dbeta):
    eager.cln_backward(dy, x, gamma, mean, rstd, count, dx, dgamma, dbeta)
    xhat = (x.float() - mean[:, None, :]) * rstd[:, None, :]
    if dgamma is not None:
        dgamma.copy_(_unordered_sum(dy.float() * xhat))
    if dbeta is not None:
        dbeta.copy_(_unordered_sum(dy))
