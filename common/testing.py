"""The one tolerance table and the closeness check (tests and benchmark).

Errors are norm-wise relative to a float64 reference of the same (already
rounded) inputs: ``||out - ref|| / ||ref||``.  NaN or Inf never passes.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

#: Base relative tolerance per dtype (DESIGN.md section 3): output rounding of
#: the dtype plus a few float32 ulps of accumulation.
BASE_RTOL: dict[torch.dtype, float] = {
    torch.float64: 1e-12,
    torch.float32: 1e-6,
    torch.float16: 1e-3,
    torch.bfloat16: 1e-2,
}

#: Unit roundoff (half an ulp at 1.0) of each dtype.
UNIT_ROUNDOFF: dict[torch.dtype, float] = {
    torch.float64: 2.0**-53,
    torch.float32: 2.0**-24,
    torch.float16: 2.0**-11,
    torch.bfloat16: 2.0**-8,
}


def tolerance(dtype: torch.dtype, reduce_len: int = 1, dc_offset: float = 0.0) -> float:
    """Relative tolerance for one output of ``dtype``.

    ``reduce_len``: length of the longest reduction behind each output (C*T
    for cLN, N for RMSNorm, rows for dw).  Rounding errors of a float32 (or
    float64) sum grow like sqrt(n) ulps, so the allowance does too (4 ulps per
    sqrt(n)).  ``dc_offset``: the inputs' mean in units of their standard
    deviation; x - mu cannot be formed better than D ulps of the input dtype,
    so that term is 2 * D * u (float32, D = 1000: 1.2e-4 + the rest; the
    E[x^2] - E[x]^2 formula gives about 0.2 there).
    """
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    acc_u = UNIT_ROUNDOFF[acc]
    return (
        BASE_RTOL[dtype]
        + 4.0 * acc_u * math.sqrt(max(reduce_len, 1))
        + 2.0 * abs(dc_offset) * UNIT_ROUNDOFF[dtype]
    )


def conditioned_tolerance(
    dtype: torch.dtype,
    reduce_len: int,
    ref: Tensor,
    kappa: Tensor,
    dc_offset: float = 0.0,
) -> float:
    """:func:`tolerance` with its offset term taken from the data, output by output.

    ``kappa``: per output, the size of the centred quantity's terms over the
    centred quantity itself, broadcastable to ``ref`` (for cLN:
    ``|gamma| * |mu_t| / sqrt(var_t + eps)``).  Forming ``x - mu`` loses
    ``kappa`` ulps there however the statistics are combined, once through
    the mean and once through the variance, so the allowance is
    ``4 * u * ||kappa|| / ||ref||``: the ``dc_offset`` term of
    :func:`tolerance` made local, with both roundings counted.

    It matters where a frame's statistics come from a few nearly equal
    values.  A (3, 1, 50) float32 draw whose first two values were 0.7502
    and 0.7501 has ``kappa`` = 1.5e4 at frame 1; the eager backend missed the
    float64 oracle by 1.6e-5 there (CI, seed 1748538939), against 2.7e-6
    allowed without this term.  Ten fresh draws with that pair (eager and
    Triton): errors 7e-6 to 2.3e-5, allowances 0.9e-4 to 3.3e-4.
    Well-conditioned data has ``kappa`` of order 1, where the term (2.4e-7
    in float32) is below the base tolerance: it loosens nothing else.  The
    larger of the nominal ``dc_offset`` term and this one applies.
    """
    ref64 = ref.detach().to(torch.float64).cpu()
    k64 = torch.broadcast_to(kappa.detach().to(torch.float64).cpu(), ref64.shape)
    ref_norm = ref64.norm().item()
    local = 4.0 * UNIT_ROUNDOFF[dtype] * k64.norm().item() / ref_norm if ref_norm > 0 else 0.0
    return max(tolerance(dtype, reduce_len, dc_offset), tolerance(dtype, reduce_len) + local)


def conditioned_terms_tolerance(
    dtype: torch.dtype,
    reduce_len: int,
    weights: Tensor,
    kappa: Tensor,
    scale: float,
    dc_offset: float = 0.0,
) -> float:
    """:func:`conditioned_tolerance` for a result judged against ``scale`` (``rel_error``'s)
    and made of terms that each use a centred quantity formed with ``kappa`` ulps lost: a term
    ``w * xhat`` (``weights`` = ``w``, broadcastable with ``kappa``) is then ``|w| * kappa * u``
    off *absolutely*, whatever the size of ``xhat`` itself, so the local allowance is
    ``4 * u * ||kappa * weights|| / scale``.  For gradients: cLN's dx and dgamma are built from
    ``xhat`` of every frame, as ill-conditioned as the forward's output where a frame's few
    values are nearly equal (a (4, 2, 3) float32 draw with offset 100: the eager backend's dx
    1.3e-4 off against 2.7e-5 allowed without this term; found by ``tests/fuzz.py``).
    dgamma's weights are ``dy``, not its terms ``dy * xhat``: with the terms, an element whose
    ``xhat`` was 0.1 (|x - mu| a tenth of the frame's std at offset 100) got a tenth of the
    allowance its error needs (the eager backend 5.9e-5 off against 4.8e-5 allowed, (2, 1, 1)
    after 13 frames of history; ``tests/fuzz.py`` again, case 25202 of a run).
    """
    k = torch.broadcast_to(kappa.detach().to(torch.float64).cpu(), weights.shape)
    w = weights.detach().to(torch.float64).cpu()
    local = 4.0 * UNIT_ROUNDOFF[dtype] * (k * w).norm().item() / scale if scale > 0 else 0.0
    return max(tolerance(dtype, reduce_len, dc_offset), tolerance(dtype, reduce_len) + local)


def rel_error(out: Tensor, ref: Tensor, scale: float = 0.0) -> float:
    """``||out - ref|| / max(||ref||, scale)`` in float64; ``inf`` if out has NaN/Inf.

    ``scale``: the norm of the terms whose difference ``ref`` is, when that
    difference can cancel (a gradient like r * (g - xhat * mean(g * xhat))
    is tiny for N = 1 though each term is not): errors are judged against
    the size of what was computed, not of what was left.
    """
    out64 = out.detach().to(torch.float64).cpu()
    ref64 = ref.detach().to(torch.float64).cpu()
    if out64.shape != ref64.shape:
        raise AssertionError(f"shape {tuple(out64.shape)} != reference {tuple(ref64.shape)}")
    if not torch.isfinite(out64).all():
        return math.inf
    denom = max(ref64.norm().item(), scale)
    num = (out64 - ref64).norm().item()
    if denom == 0.0:
        return num
    return num / denom


def assert_close(name: str, out: Tensor, ref: Tensor, tol: float, scale: float = 0.0) -> float:
    """Raise ``AssertionError`` unless ``rel_error(out, ref, scale) <= tol``; return it."""
    err = rel_error(out, ref, scale)
    if not err <= tol:
        raise AssertionError(
            f"{name}: relative error {err:.3e} exceeds tolerance {tol:.3e} "
            f"(dtype {out.dtype}, shape {tuple(out.shape)})"
        )
    return err
