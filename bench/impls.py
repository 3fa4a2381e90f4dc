"""What gets timed: the project's backends and the peers a user would pick instead.

Every implementation is turned into one uniform forward function
``fn(x, params) -> y`` with ``params = (gamma, beta)`` for cLN and
``(weight,)`` for RMSNorm, so the runner treats all of them alike.

Project backends go through the public API only (``common.cln`` /
``common.rmsnorm`` with ``backend=``).  Peers:

* ``torch-eager``: the formulas found in the wild (:mod:`common.peers`:
  Asteroid-style cumsum cLN, the LLaMA RMSNorm one-liner).
* ``torch-compile``: ``torch.compile(<torch-eager>, dynamic=False)``, compiled
  afresh for every (shape, dtype) (with AOTAutograd's buffer donation off, so
  that the backward can be re-run from a kept forward).
* ``F.rms_norm``: ``torch.nn.functional.rms_norm`` (RMSNorm only).
* ``liger``: Liger-Kernel's ``LigerRMSNormFunction`` (RMSNorm only, CUDA only,
  when importable), called with ``in_place=False`` so that its backward does
  not overwrite ``dy`` between repeats.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

import common
from common.peers import cln_cumsum_eager, rmsnorm_eager
from common.registry import get_backend

CLN_EPS = 1e-8
RMS_EPS = 1e-6

Params = tuple[Tensor, ...]
ForwardFn = Callable[[Tensor, Params], Tensor]

#: Peer names, in table order.
PEERS: tuple[str, ...] = ("torch-eager", "torch-compile", "F.rms_norm", "liger")
PEER_ALIASES: dict[str, str] = {
    "eager": "torch-eager",
    "torch-eager": "torch-eager",
    "compile": "torch-compile",
    "torch-compile": "torch-compile",
    "torch.compile": "torch-compile",
    "f.rms_norm": "F.rms_norm",
    "rms_norm": "F.rms_norm",
    "liger": "liger",
}
EAGER_PEER = "torch-eager"
COMPILE_PEER = "torch-compile"


@dataclass(frozen=True)
class Impl:
    """One implementation of one op."""

    name: str
    kind: str  # "backend" or "peer"
    op: str
    fwd: bool  # has a forward for this (dtype, device)
    bwd: bool  # has a backward for this (dtype, device)
    reason: str = ""  # why fwd/bwd is missing, if it is
    build: Callable[[], ForwardFn] | None = None  # None: not runnable (see reason)


def backend_fn(op: str, name: str) -> ForwardFn:
    if op == "cln":

        def f(x: Tensor, p: Params) -> Tensor:
            return common.cln(x, p[0], p[1], CLN_EPS, backend=name)  # type: ignore[return-value]
    else:

        def f(x: Tensor, p: Params) -> Tensor:
            return common.rmsnorm(x, p[0], RMS_EPS, backend=name)

    return f


def backend_impl(op: str, name: str, dtype: torch.dtype, device: torch.device) -> Impl:
    """A project backend through the public API, with what it declares."""
    spec = get_backend(name)
    why = spec.unavailable_reason()
    if why is not None:
        return Impl(name, "backend", op, False, False, f"unavailable: {why}")
    fwd = spec.supports(f"{op}_fwd", dtype, device)
    bwd = spec.supports(f"{op}_bwd", dtype, device)
    reason = ""
    if not fwd or not bwd:
        missing = [d for d, ok in (("fwd", fwd), ("bwd", bwd)) if not ok]
        reason = (
            f"{name} does not declare {op} {'/'.join(missing)} for "
            f"{str(dtype).removeprefix('torch.')} on {device.type}"
        )
    return Impl(name, "backend", op, fwd, bwd, reason, lambda: backend_fn(op, name))


def _eager_peer(op: str) -> ForwardFn:
    if op == "cln":

        def f(x: Tensor, p: Params) -> Tensor:
            return cln_cumsum_eager(x, p[0], p[1], CLN_EPS)
    else:

        def f(x: Tensor, p: Params) -> Tensor:
            return rmsnorm_eager(x, p[0], RMS_EPS)

    return f


def _compile_peer(op: str) -> ForwardFn:
    target = cln_cumsum_eager if op == "cln" else rmsnorm_eager
    # The bwd mode re-runs the backward of a kept forward (retain_graph=True), which
    # AOTAutograd refuses when the backward donates saved buffers.  Donation only
    # lowers peak memory; the kernels and their traffic are the same.
    fconf = getattr(torch, "_functorch", None)
    if fconf is not None and hasattr(fconf.config, "donated_buffer"):
        fconf.config.donated_buffer = False
    compiled = torch.compile(target, dynamic=False)
    eps = CLN_EPS if op == "cln" else RMS_EPS

    def f(x: Tensor, p: Params) -> Tensor:
        return compiled(x, *p, eps)

    return f


def _frms_peer() -> ForwardFn:
    def f(x: Tensor, p: Params) -> Tensor:
        return F.rms_norm(x, (x.shape[-1],), p[0], RMS_EPS)

    return f


def liger_available() -> str | None:
    """``None`` if Liger-Kernel's RMSNorm can be imported, else why not."""
    if importlib.util.find_spec("liger_kernel") is None:
        return "liger_kernel is not installed"
    try:
        importlib.import_module("liger_kernel.ops.rms_norm")
    except Exception as exc:  # an optional peer must never take the run down
        return f"liger_kernel.ops.rms_norm failed to import: {type(exc).__name__}: {exc}"
    return None


def _liger_peer() -> ForwardFn:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    def f(x: Tensor, p: Params) -> Tensor:
        # (X, W, eps, offset, casting_mode, in_place): LLaMA casting like rmsnorm_eager.
        return LigerRMSNormFunction.apply(x, p[0], RMS_EPS, 0.0, "llama", False)

    return f


def peer_impl(op: str, name: str, dtype: torch.dtype, device: torch.device) -> Impl | None:
    """The peer ``name`` for ``op``, or ``None`` if that peer has no such op."""
    if name == EAGER_PEER:
        return Impl(name, "peer", op, True, True, "", lambda: _eager_peer(op))
    if name == COMPILE_PEER:
        return Impl(name, "peer", op, True, True, "", lambda: _compile_peer(op))
    if op != "rmsnorm":
        return None
    if name == "F.rms_norm":
        return Impl(name, "peer", op, True, True, "", _frms_peer)
    if name == "liger":
        if device.type != "cuda":
            return Impl(name, "peer", op, False, False, "liger needs a CUDA device")
        why = liger_available()
        if why is not None:
            return Impl(name, "peer", op, False, False, why)
        if dtype == torch.float64:
            return Impl(name, "peer", op, False, False, "liger has no float64 kernels")
        return Impl(name, "peer", op, True, True, "", _liger_peer)
    raise ValueError(f"unknown peer {name!r}; peers: {', '.join(PEERS)}")


def parse_peers(text: str, device: torch.device) -> list[str]:
    """``--peers`` value -> peer names.  ``all``: every peer (CPU: no torch.compile)."""
    t = text.strip().lower()
    if t in ("none", ""):
        return []
    if t in ("all", "default"):
        if device.type == "cpu":
            # torch.compile on the CPU needs a C++ toolchain and tens of seconds per
            # shape; ask for it by name (--peers eager,compile) to include it.
            return [p for p in PEERS if p not in (COMPILE_PEER, "liger")]
        return list(PEERS)
    out: list[str] = []
    for raw in t.split(","):
        key = raw.strip()
        if not key:
            continue
        if key not in PEER_ALIASES:
            raise ValueError(f"unknown peer {raw.strip()!r}; peers: {', '.join(PEERS)}, all, none")
        name = PEER_ALIASES[key]
        if name not in out:
            out.append(name)
    return out
