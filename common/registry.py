"""The one registry of backends, and backend selection.

Each backend folder exposes a ``SPEC`` (a frozen :class:`BackendSpec`) from its
``__init__.py`` without importing its toolchain; the kernels module named by
``SPEC.module`` is imported only when the backend is first used.  Adding a
backend means adding its folder plus one line in :data:`_BACKEND_PACKAGES`.

Selection order (see :func:`select_backend`): an explicit ``backend=``
argument, then the ``NORM_BACKEND`` environment variable, then the best
available backend for the tensor's device.  An explicit request that cannot be
met raises; it never falls back silently.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

import torch

#: Every op direction a backend can declare.
OPS: tuple[str, ...] = ("cln_fwd", "cln_bwd", "rmsnorm_fwd", "rmsnorm_bwd")

#: Import paths of the backend packages, in order of preference for automatic
#: selection on a CUDA device (the eager backend is always last: it is the
#: portable fallback and the only automatic choice on the CPU).
_BACKEND_PACKAGES: tuple[str, ...] = (
    "backends.triton",
    "backends.cuda_ext",
    "common.eager",
    "backends.triton_minimal",  # automatic=False: by name only
)

ENV_VAR = "NORM_BACKEND"


class BackendError(RuntimeError):
    """Base class of this package's backend errors."""


class UnknownBackendError(BackendError, ValueError):
    """A backend name that is not registered."""


class BackendUnavailableError(BackendError):
    """A registered backend whose toolchain is not usable on this machine."""


class UnsupportedError(BackendError, TypeError):
    """A call outside what the chosen backend declares (op, dtype, device)."""


def _no_probe() -> str | None:
    return None


@dataclass(frozen=True)
class BackendSpec:
    """What a backend is and what it supports.

    ``probe`` returns ``None`` when the backend can run here, else a sentence
    saying why not and what to install.  It must be cheap and must not compile
    anything.  ``emulator_env`` names the environment variable that lets the
    backend run on CPU tensors/host arrays under an emulator (the Triton
    interpreter, the Numba CUDA simulator); CPU support then exists only while
    that variable is ``1``, and automatic selection never picks an emulator.
    ``automatic=False``: only by name (``backend=`` or the environment variable), never as
    the best available (a teaching or experimental backend).
    """

    name: str
    description: str
    module: str
    ops: frozenset[str]
    dtypes: frozenset[torch.dtype]
    devices: frozenset[str]
    streaming: bool = True
    requires: str = ""
    probe: Callable[[], str | None] = field(default=_no_probe, compare=False)
    emulator_env: str | None = None
    automatic: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.ops) - set(OPS)
        if unknown:
            raise ValueError(f"backend {self.name!r} declares unknown ops {sorted(unknown)}")

    # ------------------------------------------------------------------ queries
    def emulated(self) -> bool:
        """True while the backend runs under its CPU emulator."""
        return self.emulator_env is not None and os.environ.get(self.emulator_env) == "1"

    def supported_devices(self) -> frozenset[str]:
        if self.emulated():
            return self.devices | {"cpu"}
        return self.devices

    def unavailable_reason(self) -> str | None:
        """``None`` if usable here, else why not (cached after the first call)."""
        return _probe_cached(self)

    def available(self) -> bool:
        return self.unavailable_reason() is None

    def supports(self, op: str, dtype: torch.dtype, device: torch.device | str) -> bool:
        dev = torch.device(device).type
        return op in self.ops and dtype in self.dtypes and dev in self.supported_devices()

    def kernels(self) -> ModuleType:
        """Import (once) and return the module holding the raw kernels."""
        mod = _kernel_modules.get(self.name)
        if mod is not None and self.name not in _extra:
            return mod
        reason = self.unavailable_reason()
        if reason is not None:
            raise BackendUnavailableError(
                f"backend {self.name!r} is not available: {reason}"
                + (f" (needs: {self.requires})" if self.requires else "")
            )
        mod = importlib.import_module(self.module)
        _kernel_modules[self.name] = mod
        return mod


_kernel_modules: dict[str, ModuleType] = {}
_probe_lock = threading.Lock()
_probe_results: dict[str, str | None] = {}


def _probe_cached(spec: BackendSpec) -> str | None:
    key = f"{spec.name}:{spec.emulated()}"
    with _probe_lock:
        if key not in _probe_results:
            try:
                _probe_results[key] = spec.probe()
            except Exception as exc:  # a probe must never take the caller down
                _probe_results[key] = f"probe failed: {type(exc).__name__}: {exc}"
        return _probe_results[key]


_registry: dict[str, BackendSpec] = {}
_extra: dict[str, BackendSpec] = {}


def _load_registry() -> dict[str, BackendSpec]:
    if not _registry:
        for pkg in _BACKEND_PACKAGES:
            spec = importlib.import_module(pkg).SPEC
            _registry[spec.name] = spec
    return {**_registry, **_extra}


def register_backend(spec: BackendSpec) -> None:
    """Register an extra backend at run time (tests' negative controls, plugins)."""
    if spec.name in _load_registry():
        raise ValueError(f"backend {spec.name!r} is already registered")
    _extra[spec.name] = spec
    _selected.clear()


def unregister_backend(name: str) -> None:
    """Remove a backend added by :func:`register_backend`."""
    _extra.pop(name, None)
    _kernel_modules.pop(name, None)
    _selected.clear()


def backend_names() -> list[str]:
    """All registered backend names, available or not."""
    return list(_load_registry())


def get_backend(name: str) -> BackendSpec:
    """The spec of backend ``name``; raises listing the known names if unknown."""
    reg = _load_registry()
    if name not in reg:
        raise UnknownBackendError(
            f"unknown backend {name!r}; known backends: {', '.join(sorted(reg))}"
        )
    return reg[name]


def available_backends(device: torch.device | str | None = None) -> list[str]:
    """Names of the backends usable on this machine (and on ``device``, if given)."""
    out = []
    for spec in _load_registry().values():
        if not spec.available():
            continue
        if device is not None and torch.device(device).type not in spec.supported_devices():
            continue
        out.append(spec.name)
    return out


_selected: dict[tuple[object, ...], BackendSpec] = {}


def select_backend(
    backend: str | None, op: str, dtype: torch.dtype, device: torch.device
) -> BackendSpec:
    """Pick the backend for one call and check the call against its declaration.

    Raises before any kernel runs, naming the backend, the op, the dtype and the
    device when the pair does not fit.  Successful choices are memoized per
    (request, op, dtype, device type): this sits on every call's host path.
    """
    name = backend if backend is not None else os.environ.get(ENV_VAR) or None
    key = (name, op, dtype, device.type, _emulators_on())
    hit = _selected.get(key)
    if hit is not None:
        return hit
    spec = _select(name, backend is not None, op, dtype, device)
    _selected[key] = spec
    return spec


def _emulators_on() -> tuple[str | None, ...]:
    return (os.environ.get("TRITON_INTERPRET"), os.environ.get("NUMBA_ENABLE_CUDASIM"))


def _select(
    name: str | None, explicit: bool, op: str, dtype: torch.dtype, device: torch.device
) -> BackendSpec:
    if name is not None:
        spec = get_backend(name)
        source = "backend=" if explicit else f"${ENV_VAR}"
        reason = spec.unavailable_reason()
        if reason is not None:
            raise BackendUnavailableError(
                f"backend {spec.name!r} (chosen by {source}) is not available: {reason}"
                + (f"; needs: {spec.requires}" if spec.requires else "")
            )
        check_support(spec, op, dtype, device)
        return spec
    for spec in _load_registry().values():
        if spec.name in _extra or not spec.automatic:
            continue
        if device.type == "cpu" and spec.name != "eager":
            continue  # emulators are for tests, never an automatic choice
        if spec.supports(op, dtype, device) and spec.available():
            return spec
    raise UnsupportedError(
        f"no available backend supports op {op!r} with dtype {_dt(dtype)} on device "
        f"{device.type!r}; available: {', '.join(available_backends()) or 'none'}"
    )


def check_support(spec: BackendSpec, op: str, dtype: torch.dtype, device: torch.device) -> None:
    problems = []
    if op not in spec.ops:
        problems.append(f"op {op!r} (it has: {', '.join(sorted(spec.ops))})")
    if dtype not in spec.dtypes:
        problems.append(
            f"dtype {_dt(dtype)} (it has: {', '.join(sorted(_dt(d) for d in spec.dtypes))})"
        )
    devs = spec.supported_devices()
    if device.type not in devs:
        hint = ""
        if device.type == "cpu" and spec.emulator_env:
            hint = f"; set {spec.emulator_env}=1 before import to emulate it on the CPU"
        problems.append(f"device {device.type!r} (it has: {', '.join(sorted(devs))}{hint})")
    if problems:
        raise UnsupportedError(
            f"backend {spec.name!r} does not support op {op!r} with dtype {_dt(dtype)} on "
            f"device {device.type!r}: unsupported " + "; ".join(problems)
        )


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
