"""The raw-kernel contract every backend's kernels module implements.

``common.api`` validates every call, picks the backend, sets the CUDA device
guard, makes tensors contiguous where this contract says so, and wires
autograd.  A backend's kernels module (``BackendSpec.module``) only has to
provide the four functions below (or the subset its ``ops`` declares).  They
are called with arguments that already satisfy everything written here, so
kernels do not repeat the checks.

Conventions
-----------
* ``acc`` dtype: ``float64`` for float64 inputs, else ``float32``.  All
  statistics and reductions accumulate in it; every returned statistic and
  parameter gradient has it.
* Parameters (``gamma``, ``beta``, ``weight``) are 1-D, contiguous, on the
  input's device, with dtype either the input's dtype or the acc dtype
  (a kernel must accept both; ``common`` casts anything else to acc).
* Outputs are allocated by ``common`` (contiguous, on the input's device) and
  passed in last; the kernel writes every element of each and returns
  ``None``.  Under test they arrive filled with NaN (``common.set_poison``),
  so an element the kernel forgets to write fails the check.
* Kernels launch on the current stream of the current device; ``common``
  has already made the input's device current.
* Sizes are >= 1 (``common`` handles empty tensors without a launch).

cLN, ``x`` of shape ``(B, C, T)``
---------------------------------
``cln_forward(x, gamma, beta, eps, state, y, mean, rstd, m2_last, mean_last=None) -> None``
    ``x`` contiguous.  ``state`` is ``None`` (the sequence starts here) or a
    tuple ``(count, mean0, m2_0)``: ``count`` int64 ``(B,)`` (how many values,
    C * frames, came before; may be 0), ``mean0`` and ``m2_0`` acc ``(B,)``,
    the mean and the sum of squared deviations of those values.  Writes
    ``y`` like ``x``; ``mean`` and ``rstd`` acc ``(B, T)``: mu_t and
    1/sqrt(var_t + eps) of every frame (the history included); ``m2_last``
    acc ``(B,)``: the sum of squared deviations over everything up to and
    including the last frame (the new state's M); ``mean_last`` acc ``(B,)``
    or ``None``: mu at the last frame (the new state's mean), written when
    given.  ``mean`` and ``rstd`` are both ``None`` when no backward will
    follow (``common`` passes them only when an input needs a gradient): the
    kernel then writes no per-frame statistics, and may schedule itself for a
    forward alone.  ``common`` passes ``mean_last`` exactly then (else it
    reads the state's mean from ``mean``).  Statistics combine with the
    parallel (Chan) rule of DESIGN.md, never E[x^2] - E[x]^2.

``cln_backward(dy, x, gamma, mean, rstd, count, dx, dgamma, dbeta) -> None``
    ``dy`` and ``x`` contiguous ``(B, C, T)``; ``mean``/``rstd`` as returned
    by the forward; ``count`` int64 ``(B,)`` or ``None`` (0): values before
    the chunk, so frame t has n_t = count + C * (t + 1).  Gradients do not
    flow into the state.  ``dx`` like ``x``; ``dgamma``/``dbeta`` are acc
    ``(C,)`` outputs, or ``None`` when not asked for; they must be reduced
    deterministically (per-program partials, then a fixed-order sum; no
    float atomics).  With ``gamma is None`` the kernel uses gamma = 1.

RMSNorm, ``x`` of shape ``(M, N)``
----------------------------------
``rmsnorm_forward(x, weight, eps, y, rstd) -> None``
    ``x.stride(1) == 1`` and ``x.stride(0) >= N`` (rows may be strided:
    a kernel must honour ``x.stride(0)`` and not copy).  ``y`` contiguous ``(M, N)``,
    ``rstd`` acc ``(M,)``.

``rmsnorm_backward(dy, x, weight, rstd, dx, dw) -> None``
    ``dy`` contiguous; ``x`` as in the forward (strided rows).  ``dx``
    contiguous ``(M, N)``; ``dw`` acc ``(N,)`` or ``None`` when not asked
    for; it must be reduced deterministically (per-program partials, then a
    fixed-order sum).
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

ClnStateTuple = tuple[Tensor, Tensor, Tensor]


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """The accumulation dtype for inputs of ``dtype``."""
    return torch.float64 if dtype == torch.float64 else torch.float32


class KernelModule(Protocol):
    def cln_forward(
        self,
        x: Tensor,
        gamma: Tensor | None,
        beta: Tensor | None,
        eps: float,
        state: ClnStateTuple | None,
        y: Tensor,
        mean: Tensor | None,
        rstd: Tensor | None,
        m2_last: Tensor,
        mean_last: Tensor | None = None,
    ) -> None: ...

    def cln_backward(
        self,
        dy: Tensor,
        x: Tensor,
        gamma: Tensor | None,
        mean: Tensor,
        rstd: Tensor,
        count: Tensor | None,
        dx: Tensor,
        dgamma: Tensor | None,
        dbeta: Tensor | None,
    ) -> None: ...

    def rmsnorm_forward(
        self, x: Tensor, weight: Tensor | None, eps: float, y: Tensor, rstd: Tensor
    ) -> None: ...

    def rmsnorm_backward(
        self,
        dy: Tensor,
        x: Tensor,
        weight: Tensor | None,
        rstd: Tensor,
        dx: Tensor,
        dw: Tensor | None,
    ) -> None: ...
