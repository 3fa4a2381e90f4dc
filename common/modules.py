"""``torch.nn.Module`` wrappers that behave like their PyTorch cousins."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from common.api import ClnState, cln, rmsnorm
from common.registry import get_backend

#: Parameter names of the cLN modules whose trained checkpoints users already have, and ours:
#: Asteroid's ``CumLN`` (``gamma``, ``beta``, shape ``(C,)``; some forks ``(1, C, 1)``) and the
#: Conv-TasNet authors' ``cLN`` (``gain``, ``bias``, shape ``(1, C, 1)``). Both compute the
#: same function as ours (biased variance over channels and frames so far, eps inside the
#: square root, 1e-8), only with the E[x^2] - E[x]^2 formula.
_FOREIGN_CLN_NAMES = (("gamma", "weight"), ("gain", "weight"), ("beta", "bias"))


class CumulativeLayerNorm(nn.Module):
    """Conv-TasNet's cumulative layer norm over ``(B, C, T)`` inputs.

    ``forward(x, state=None, return_state=False)``; see :func:`common.cln`.
    Parameters ``weight`` (gamma) and ``bias`` (beta) have shape ``(C,)`` and
    start at ones and zeros, like ``nn.GroupNorm``'s.

    ``load_state_dict`` also takes the checkpoints of the modules this one replaces:
    Asteroid's ``CumLN`` (``gamma`` / ``beta``) and the Conv-TasNet reference code's ``cLN``
    (``gain`` / ``bias`` of shape ``(1, C, 1)``), so a trained separator keeps its weights
    when its norm layers are swapped for this one. Its own ``state_dict`` keeps the names
    ``weight`` and ``bias``.
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

    def _load_from_state_dict(
        self,
        state_dict: dict[str, object],
        prefix: str,
        local_metadata: dict[str, object],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        # ``load_state_dict`` hands every module its own copy of the dict, so renaming keys
        # here (as BatchNorm's version upgrade does) does not touch the caller's. Without
        # affine parameters nothing is renamed: a foreign ``gamma`` then stays an unexpected
        # key under the name the user knows.
        if self.affine:
            for theirs, ours in _FOREIGN_CLN_NAMES:
                if prefix + theirs in state_dict and prefix + ours not in state_dict:
                    state_dict[prefix + ours] = state_dict.pop(prefix + theirs)
            for name in ("weight", "bias"):
                v = state_dict.get(prefix + name)
                # (1, C, 1), the broadcast shape of the reference code, is our (C,)
                if isinstance(v, Tensor) and v.dim() == 3 and v.shape[0] == v.shape[2] == 1:
                    state_dict[prefix + name] = v.reshape(-1)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
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
