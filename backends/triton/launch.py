"""Direct launches of compiled Triton kernels: the host side of one kernel call.

``fn[grid](*args, **kwargs)`` runs ``JITFunction.run`` on every call: it binds the arguments,
specializes each of them in turn, builds the cache key from all of them, looks the compiled
kernel up, checks the globals the kernel reads, and then calls the compiled kernel's launcher.
For the cLN kernels (19 runtime arguments, 41 constexprs and options) that bookkeeping costs
more host time than the launch itself: a cLN forward's zero kernel + forward kernel took 90.3
us of host time through ``JITFunction.run``, 50.5 us through :class:`Bound` and 31.7 us in the
two compiled launchers alone (H200 machine, Triton 3.6; ``bench.profile_launch``, NOTES 48.2).
In a Conv-TasNet training step, eagerly, that was 24.39 -> 20.82 ms per step (NOTES 48.6).

:class:`Kernel` wraps a ``@triton.jit`` function and keeps the compiled kernel of every
specialization it has launched, keyed at least as finely as Triton specializes (each tensor's
dtype and 16-byte alignment, each integer's value, each other argument's type, the constexprs
and launch options, the current device): the first launch of a key goes through
``JITFunction.run`` (compiling if need be), later ones call the same compiled kernel's
launcher with the arguments ``JITFunction.run`` would pass it, so a direct launch runs exactly
the kernel the slow path would have run.

The launcher's calling convention is Triton-internal, so the direct path is on only where the
installed Triton's ``JITFunction.run`` ends in the call mirrored here (checked once, from its
source); elsewhere, under the interpreter (``TRITON_INTERPRET=1``), and with
``NORMK_TRITON_DIRECT_LAUNCH=0`` every launch goes through ``JITFunction.run``.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Sequence
from typing import Any

import torch

#: The last statement of ``JITFunction.run`` that :meth:`Kernel.launch` mirrors (whitespace
#: collapsed): the launcher gets the grid, the stream, the kernel's handle and metadata, the
#: launch hooks and then every bound argument, constexprs included, in parameter order.
_MIRRORED = (
    "kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, kernel.packed_metadata, "
    "launch_metadata, knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, "
    "*bound_args.values())"
)


@functools.lru_cache(maxsize=1)
def direct_supported() -> str | None:
    """None when this Triton's ``JITFunction.run`` launches as :class:`Kernel` mirrors, else
    why the direct path stays off."""
    try:
        from triton import knobs  # noqa: F401  (the hooks' home since Triton 3.4)
        from triton.runtime.jit import JITFunction

        src = " ".join(inspect.getsource(JITFunction.run).split())
    except (ImportError, OSError, TypeError) as e:
        return f"cannot read triton's JITFunction.run ({e})"
    if _MIRRORED not in src:
        return "this triton's JITFunction.run launches differently from the mirrored call"
    return None


def direct_enabled() -> bool:
    """Whether launches may bypass ``JITFunction.run`` (env ``NORMK_TRITON_DIRECT_LAUNCH``,
    default on, read on every call so a test or a benchmark can switch it)."""
    return os.environ.get("NORMK_TRITON_DIRECT_LAUNCH", "1") != "0" and direct_supported() is None


@functools.lru_cache(maxsize=1)
def _knobs() -> Any:
    from triton import knobs

    return knobs


def _is_jit(fn: object) -> bool:
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return False
    return isinstance(fn, JITFunction)


def current_device() -> int:
    """The device ``JITFunction.run`` launches on (the current CUDA device)."""
    return _driver_fns()[0]()


def current_stream(device: int) -> int:
    """The stream ``JITFunction.run`` launches on (the current stream of ``device``)."""
    return _driver_fns()[1](device)


@functools.lru_cache(maxsize=1)
def _driver_fns() -> tuple[Any, Any]:
    # The active driver's two functions, looked up once (``driver.active`` is a lazy proxy).
    from triton.runtime import driver

    return driver.active.get_current_device, driver.active.get_current_stream


def arg_key(a: object) -> object:
    """A key of one runtime argument at least as fine as Triton's specialization of it:
    tensors by dtype and 16-byte alignment, integers by value (Triton: ``== 1``, ``% 16 == 0``,
    int32 or wider), floats by type (always fp32), anything else by type and value."""
    t = type(a)
    if t is int:
        return a  # the launches here pass shapes and counts, fixed per launch plan
    if t is float:
        return float
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.data_ptr() % 16 == 0)
    return (t, a)


class Kernel:
    """A ``@triton.jit`` function launched as ``Kernel(fn)[grid](*args, **constexprs)``, like
    the function itself, but directly once compiled (see the module's docstring).

    Runtime arguments must be positional, constexprs and launch options keywords.  A call site
    whose keywords repeat can :meth:`bind` them once and launch the :class:`Bound` (no keyword
    dict to build, hash and bind per call).
    """

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        # Only a compiled JITFunction (not the interpreter's InterpretedFunction) has a launcher.
        params = getattr(fn, "params", None) if _is_jit(fn) else None
        self.params = list(params) if params is not None else None
        self._bound: dict[tuple[object, ...], Bound] = {}

    def bind(self, **kwargs: object) -> Bound:
        """The kernel with these constexprs and launch options fixed."""
        return Bound(self, kwargs)

    def __getitem__(self, grid: Sequence[int]) -> Any:
        return functools.partial(self.launch, tuple(grid))

    def launch(self, grid: tuple[int, ...], *args: object, **kwargs: object) -> Any:
        # The Bound decides between the direct path and JITFunction.run.
        key = tuple(kwargs.items())
        b = self._bound.get(key)
        if b is None:
            if len(self._bound) >= _MAX_ENTRIES:
                self._bound.clear()
            b = self._bound[key] = Bound(self, kwargs)
        return b.launch(grid, *args)


class Bound:
    """A :class:`Kernel` with its keywords fixed: ``Bound[grid](*args)`` or
    ``Bound.launch(grid, *args)``; one compiled kernel per (device, runtime arguments' keys)."""

    def __init__(self, kernel: Kernel, kwargs: dict[str, object]) -> None:
        self.kernel = kernel
        self.kwargs = kwargs
        # key -> (compiled kernel, the constexprs' values in parameter order, the globals it
        # read as the objects they were)
        self._compiled: dict[tuple[object, ...], tuple[Any, tuple[object, ...], tuple]] = {}

    def __getitem__(self, grid: Sequence[int]) -> Any:
        return functools.partial(self.launch, tuple(grid))

    def _tail(self, n_args: int) -> tuple[object, ...] | None:
        """The bound values of the parameters after the ``n_args`` positional ones, in
        parameter order (keywords, else defaults), as ``JITFunction.run`` binds them."""
        tail = []
        for p in self.kernel.params[n_args:]:  # type: ignore[index]
            if p.name in self.kwargs:
                tail.append(self.kwargs[p.name])
            elif p.default is not inspect.Parameter.empty:
                tail.append(p.default)
            else:
                return None
        return tuple(tail)

    def _slow(self, key: tuple[object, ...], grid: tuple[int, ...], args: tuple) -> Any:
        fn = self.kernel.fn
        ck = fn[grid](*args, **self.kwargs)  # compiles if need be; raises as Triton does
        tail = self._tail(len(args))
        if ck is not None and tail is not None:
            # The globals the kernel read, as the objects bound now: a later launch goes
            # direct only while each name still holds the same object (else JITFunction.run
            # compares the values, and raises if one changed).
            snap = tuple(
                (g, n, g.get(n, _MISSING)) for (n, _), (_, g) in fn.used_global_vals.items()
            )
            if len(self._compiled) >= _MAX_ENTRIES:
                self._compiled.clear()
            self._compiled[key] = (ck, tail, snap)
        return ck

    def launch(self, grid: tuple[int, ...], *args: object) -> Any:
        if self.kernel.params is None or not direct_enabled():
            return self.kernel.fn[grid](*args, **self.kwargs)
        dev = current_device()
        key = (dev, *map(arg_key, args))
        hit = self._compiled.get(key)
        if hit is None:
            return self._slow(key, grid, args)
        ck, tail, snap = hit
        for g, n, o in snap:
            if g.get(n, _MISSING) is not o:
                return self._slow(key, grid, args)
        vals = (*args, *tail)
        g3 = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
        stream = current_stream(dev)
        rt = _knobs().runtime
        enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
        # What launch_metadata returns without an enter hook (and only then): None.
        meta = None if enter is None else ck.launch_metadata(g3, stream, *vals)
        ck.run(*g3, stream, ck.function, ck.packed_metadata, meta, enter, leave, *vals)
        return ck


#: Bound keyword sets per kernel and compiled specializations per bound set, each cleared when
#: it reaches this size (a guard against unbounded growth, far above any real use).
_MAX_ENTRIES = 4096
_MISSING = object()
