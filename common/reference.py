"""References, written once, used by the tests and the benchmark.

* :func:`cln_oracle` / :func:`rmsnorm_oracle`: float64, straight from the
  definition in DESIGN.md (a loop over t; slow, obvious, differentiable by
  autograd).  The tests' ground truth for values and gradients.
* :func:`cln_reference` / :func:`rmsnorm_reference`: float64 through the eager
  backend's vectorized, stable code; fast enough for the benchmark's
  correctness check on large shapes.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _f64(t: Tensor | None) -> Tensor | None:
    return None if t is None else t.detach().double()


def cln_oracle(
    x: Tensor,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    eps: float = 1e-8,
    history: Tensor | None = None,
) -> Tensor:
    """cLN of ``x`` (B, C, T) in float64, by the definition.

    ``history`` (B, C, T0) are earlier frames of the same sequences (the
    streaming state in its plainest form): statistics include them, the output
    covers ``x`` only.  Differentiable (autograd flows into x, gamma, beta).
    """
    x = x.double()
    full = x if history is None else torch.cat([history.detach().double(), x], -1)
    t0 = full.shape[-1] - x.shape[-1]
    outs = []
    for t in range(x.shape[-1]):
        seen = full[:, :, : t0 + t + 1]
        mu = seen.mean(dim=(1, 2), keepdim=True)
        var = (seen - mu).square().mean(dim=(1, 2), keepdim=True)
        outs.append((x[:, :, t : t + 1] - mu) / torch.sqrt(var + eps))
    y = torch.cat(outs, -1)
    if gamma is not None:
        y = y * gamma.double()[:, None]
    if beta is not None:
        y = y + beta.double()[:, None]
    return y


def rmsnorm_oracle(x: Tensor, weight: Tensor | None = None, eps: float = 1e-6) -> Tensor:
    """RMSNorm over the last dim in float64, by the definition (differentiable)."""
    x = x.double()
    y = x / torch.sqrt(x.square().mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    return y


def cln_reference(
    x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None, eps: float = 1e-8
) -> Tensor:
    """Fast float64 cLN (the eager backend's stable code on float64 copies)."""
    from common.api import cln

    return cln(x.detach().double(), _f64(gamma), _f64(beta), eps, backend="eager")


def rmsnorm_reference(x: Tensor, weight: Tensor | None = None, eps: float = 1e-6) -> Tensor:
    """Fast float64 RMSNorm (vectorized; same formula as the oracle)."""
    return rmsnorm_oracle(x.detach(), None if weight is None else weight.detach(), eps)
