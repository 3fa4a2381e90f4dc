"""One interface for cumulative layer norm (cLN) and RMSNorm on four GPU toolchains.

>>> import torch, common
>>> x = torch.randn(2, 8, 100)
>>> y = common.cln(x)                      # best available backend
>>> y = common.cln(x, backend="eager")     # or pick one (also: $NORM_BACKEND)
"""

from common.api import ClnState, cln, rmsnorm, set_poison
from common.modules import CumulativeLayerNorm, RMSNorm
from common.registry import (
    BackendError,
    BackendSpec,
    BackendUnavailableError,
    UnknownBackendError,
    UnsupportedError,
    available_backends,
    backend_names,
    get_backend,
)

__all__ = [
    "BackendError",
    "BackendSpec",
    "BackendUnavailableError",
    "ClnState",
    "CumulativeLayerNorm",
    "RMSNorm",
    "UnknownBackendError",
    "UnsupportedError",
    "available_backends",
    "backend_names",
    "cln",
    "get_backend",
    "rmsnorm",
    "set_poison",
]
