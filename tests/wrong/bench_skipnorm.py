"""Negative control for the benchmark harness: kernels that skip the normalization.

Implements :mod:`common.kernel_api`'s contract in shape only: every output is
written (so NaN poisoning does not catch it), but ``y = x`` and ``dx = dy``.
``tests/test_bench.py`` registers it as a backend and checks that the harness
reports it FAILED and never times it.
"""

from __future__ import annotations

from torch import Tensor

from common.kernel_api import ClnStateTuple


def cln_forward(
    x: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    eps: float,
    state: ClnStateTuple | None,
    y: Tensor,
    mean: Tensor,
    rstd: Tensor,
    m2_last: Tensor,
) -> None:
    y.copy_(x)  # wrong on purpose: no normalization
    mean.zero_()
    rstd.fill_(1.0)
    m2_last.zero_()


def cln_backward(
    dy: Tensor,
    x: Tensor,
    gamma: Tensor | None,
    mean: Tensor,
    rstd: Tensor,
    count: Tensor | None,
    dx: Tensor,
    dgamma: Tensor | None,
    dbeta: Tensor | None,
) -> None:
    dx.copy_(dy)
    if dgamma is not None:
        dgamma.zero_()
    if dbeta is not None:
        dbeta.zero_()


def rmsnorm_forward(x: Tensor, weight: Tensor | None, eps: float, y: Tensor, rstd: Tensor) -> None:
    y.copy_(x)  # wrong on purpose: no normalization
    rstd.fill_(1.0)


def rmsnorm_backward(
    dy: Tensor, x: Tensor, weight: Tensor | None, rstd: Tensor, dx: Tensor, dw: Tensor | None
) -> None:
    dx.copy_(dy)
    if dw is not None:
        dw.zero_()
