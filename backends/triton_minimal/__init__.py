"""Triton, teaching size: the cLN of ``backends/triton`` as three short kernels per direction.

Never chosen automatically (``automatic=False``): it is there to read, and for the benchmark
to show what the tuned kernels add. Ask for it by name (``backend="triton_minimal"``).
"""

from __future__ import annotations

from backends.triton import SPEC as _TRITON
from common.registry import BackendSpec

SPEC = BackendSpec(
    name="triton_minimal",
    description="Triton, teaching size: cLN as tile statistics, a carry over tiles, normalize",
    module="backends.triton_minimal.kernels",
    ops=frozenset({"cln_fwd", "cln_bwd"}),
    # the same toolchain as the triton backend, so the same dtypes, devices and probe
    dtypes=_TRITON.dtypes,
    devices=_TRITON.devices,
    streaming=True,
    requires=_TRITON.requires,
    probe=_TRITON.probe,
    emulator_env=_TRITON.emulator_env,
    automatic=False,
)
