"""``torch.nn.Module`` wrappers that behave like their PyTorch cousins."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from common.api import ClnState, cln, rmsnorm
from common.registry import get_backend


class CumulativeLayerNorm(nn.Module):
    """Conv-TasNet's cumulative layer norm over ``(B, C, T)`` inputs.

    ``forward(x, state=None, return_state=False)``; see :func:`common.cln`.
    Parameters ``weight`` (gamma) and ``bias`` (beta) have shape ``(C,)`` and
    start at ones and zeros, like ``nn.GroupNorm``'s.
    """

    def __init__(
        self,
        num_channels: int,
        eps: float = 1e-8,
        affine: bool = True,
        backend: str | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if num_channels < 1:
            raise ValueError(f"num_channels must be >= 1, got {num_channels}")
        if backend is not None:
            get_backend(backend)  # an unknown name fails here, listing the known ones
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self.backend = backend
        if affine:
            self.weight = nn.Parameter(torch.ones(num_channels, device=device, dtype=dtype))
            self.bias = nn.Parameter(torch.zeros(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.affine:
            nn.init.ones_(self.weight)
            nn.init.zeros_(self.bias)

    def forward(
        self, x: Tensor, state: ClnState | None = None, return_state: bool = False
    ) -> Tensor | tuple[Tensor, ClnState]:
        return cln(
            x,
            self.weight,
            self.bias,
            self.eps,
            backend=self.backend,
            state=state,
            return_state=return_state,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_channels}, eps={self.eps}, affine={self.affine}, backend={self.backend!r}"
        )


class RMSNorm(nn.Module):
    """RMSNorm over the last dim, with the signature of ``torch.nn.RMSNorm``.

    ``hidden_size`` is an int (the last dim).  ``eps=None`` is not accepted:
    the default is 1e-6 (LLaMA's).
    """

    def __init__(
        self,
        hidden_size: int,
        eps: float = 1e-6,
        elementwise_affine: bool = True,
        backend: str | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if hidden_size < 1:
            raise ValueError(f"hidden_size must be >= 1, got {hidden_size}")
        if backend is not None:
            get_backend(backend)  # an unknown name fails here, listing the known ones
        self.hidden_size = hidden_size
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.backend = backend
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            nn.init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return rmsnorm(x, self.weight, self.eps, backend=self.backend)

    def extra_repr(self) -> str:
        return (
            f"{self.hidden_size}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, backend={self.backend!r}"
        )
