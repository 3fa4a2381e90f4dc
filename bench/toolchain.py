"""The ptxas that Triton compiles each benchmarked implementation with.

Triton compiles with its own bundled ptxas unless ``TRITON_PTXAS_PATH`` names another.
torch.compile's Inductor sets that variable to torch's own ``bin/ptxas`` the first time it
compiles, for the rest of the process (``torch/_inductor/runtime/compile_tasks.py``,
``_set_triton_ptxas_path``; it leaves a value the user set alone).  Every Triton kernel compiled
after that, this project's included, then takes torch's ptxas.  In a benchmark process the
torch.compile peer of the first group therefore changed the toolchain of the Triton backend's
kernels in all later groups, and with it their speed: on the H200, Triton's fp32 cLN backward
at (2, 128, 64000) took 81.3 us with the bundled ptxas (12.8) and 86.1 us with torch's (13.0),
which made the same case 8-10 us slower as a later group than as the first
(``bench/results/nvidia-h200-s19e-ptxas.log``, NOTES 22).

The runner therefore gives every implementation the toolchain it gets on its own: the
torch.compile peer Inductor's choice, everything else the one the process started with.  The
figures no longer depend on the order of the groups.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import torch

ENV = "TRITON_PTXAS_PATH"
#: The value at import (the benchmark's start): the toolchain of everything but torch.compile.
_START = os.environ.get(ENV)


def inductor_ptxas() -> str | None:
    """The ptxas Inductor points Triton at: a ``TRITON_PTXAS_PATH`` set before the run, else
    torch's ``bin/ptxas`` where torch ships one, else None (Triton's own)."""
    if _START is not None:
        return _START
    p = Path(torch.__file__).parent / "bin" / "ptxas"
    return str(p) if p.is_file() and os.access(p, os.X_OK) else None


def ptxas_for(is_compile_peer: bool) -> str | None:
    """``TRITON_PTXAS_PATH`` for one implementation (None: unset, Triton's bundled ptxas)."""
    return inductor_ptxas() if is_compile_peer else _START


@contextlib.contextmanager
def env_var(name: str, value: str | None) -> Iterator[None]:
    """Environment variable ``name`` = ``value`` (None: unset) inside, the previous value
    after."""
    old = os.environ.get(name)
    _set(name, value)
    try:
        yield
    finally:
        _set(name, old)


def ptxas_env(value: str | None) -> contextlib.AbstractContextManager[None]:
    """``TRITON_PTXAS_PATH`` = ``value`` (None: unset) inside, the previous value after."""
    return env_var(ENV, value)


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def describe() -> dict[str, str]:
    """Which ptxas (path and release) Triton uses for the backends and for torch.compile, as
    Triton itself resolves ``TRITON_PTXAS_PATH`` (falling back to its bundled one)."""
    try:
        import triton
    except ImportError:
        return {}
    out = {}
    for who, value in (("backends", ptxas_for(False)), ("torch.compile", ptxas_for(True))):
        with ptxas_env(value):
            try:
                tool = triton.knobs.nvidia.ptxas
                out[who] = f"{tool.path} (release {tool.version})"
            except RuntimeError as exc:  # Triton finds no ptxas at all
                out[who] = f"none ({exc})"
    return out
