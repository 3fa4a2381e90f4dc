"""Triton backend: cLN and RMSNorm kernels written with ``@triton.jit``."""

from __future__ import annotations

import importlib.util

import torch

from common.registry import BackendSpec


def _probe() -> str | None:
    if importlib.util.find_spec("triton") is None:
        return "the 'triton' package is not installed (pip install triton)"
    import os

    if os.environ.get("TRITON_INTERPRET") == "1":
        return None
    if not torch.cuda.is_available():
        return "no CUDA device (set TRITON_INTERPRET=1 before import to run on the CPU)"
    return None


SPEC = BackendSpec(
    name="triton",
    description="Triton kernels; single-pass cLN scan with a fixed-order two-level prefix",
    module="backends.triton.kernels",
    ops=frozenset({"cln_fwd", "cln_bwd", "rmsnorm_fwd", "rmsnorm_bwd"}),
    dtypes=frozenset({torch.float32, torch.float16, torch.bfloat16}),
    devices=frozenset({"cuda"}),
    streaming=True,
    requires="triton>=3.0 and a CUDA GPU (or TRITON_INTERPRET=1 on the CPU)",
    probe=_probe,
    emulator_env="TRITON_INTERPRET",
)
