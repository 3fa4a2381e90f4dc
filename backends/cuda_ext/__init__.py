"""CUDA C++ extension backend, JIT-built by ``torch.utils.cpp_extension``."""

from __future__ import annotations

import shutil

import torch

from common.registry import BackendSpec


def _probe() -> str | None:
    if not torch.cuda.is_available() or torch.version.cuda is None:
        return "needs a CUDA build of PyTorch and a CUDA device"
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME is None and shutil.which("nvcc") is None:
        return "nvcc not found (install the CUDA toolkit or set CUDA_HOME)"
    return None


SPEC = BackendSpec(
    name="cuda_ext",
    description="CUDA C++ kernels + C++ binding, JIT-built by torch.utils.cpp_extension",
    module="backends.cuda_ext.kernels",
    ops=frozenset({"cln_fwd", "cln_bwd", "rmsnorm_fwd", "rmsnorm_bwd"}),
    dtypes=frozenset({torch.float32, torch.float16, torch.bfloat16, torch.float64}),
    devices=frozenset({"cuda"}),
    streaming=True,
    requires="a CUDA build of torch, nvcc, a C++ compiler, ninja",
    probe=_probe,
)
