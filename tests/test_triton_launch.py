"""The Triton backend's direct launches (``backends/triton/launch.py``).

On the CPU: the cache logic against a fake compiled kernel (which launch goes the slow way,
what the launcher is passed).  On a GPU: a direct launch gives bitwise the outputs of
``JITFunction.run``'s, for every kernel of both ops, at aligned and misaligned inputs.
"""

from __future__ import annotations

import importlib.util
import inspect
from types import SimpleNamespace

import pytest
import torch

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None, reason="triton is not installed"
)


def _launch_module():
    from backends.triton import launch

    return launch


class _FakeCompiled:
    def __init__(self, log: list) -> None:
        self.log = log
        self.function = "handle"
        self.packed_metadata = "meta"

    def launch_metadata(self, grid, stream, *vals):
        return None

    def run(self, *a):
        self.log.append(("direct", a))


class _FakeJit:
    """Stands in for a JITFunction: runtime args x, n; constexprs A, B (B defaults to 7)."""

    def __init__(self) -> None:
        P = inspect.Parameter
        self.params = [
            SimpleNamespace(name="x", default=P.empty),
            SimpleNamespace(name="n", default=P.empty),
            SimpleNamespace(name="A", default=P.empty),
            SimpleNamespace(name="B", default=7),
        ]
        self.used_global_vals: dict = {}
        self.log: list = []
        self.compiled = _FakeCompiled(self.log)

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.log.append(("slow", grid, args, kwargs))
            return self.compiled

        return run


@pytest.fixture
def fake(monkeypatch):
    L = _launch_module()
    if L.direct_supported() is not None:
        pytest.skip(f"direct launch off with this triton: {L.direct_supported()}")
    monkeypatch.setenv("NORMK_TRITON_DIRECT_LAUNCH", "1")
    monkeypatch.setattr(L, "_is_jit", lambda fn: True)
    monkeypatch.setattr(L, "current_device", lambda: 0)
    monkeypatch.setattr(L, "current_stream", lambda dev: 1234)
    fn = _FakeJit()
    return L.Kernel(fn), fn


def _kinds(log):
    return [e[0] for e in log]


def test_second_launch_is_direct_with_the_bound_values(fake):
    k, fn = fake
    x = torch.zeros(8)
    k[(3,)](x, 5, A=2, num_warps=4)
    k[(3,)](x, 5, A=2, num_warps=4)
    assert _kinds(fn.log) == ["slow", "direct"]
    _, a = fn.log[1]
    # grid padded to 3-D, the stream, handle, metadata, launch metadata, the two hooks, then
    # the runtime args and every constexpr in parameter order, defaults filled in.
    assert a[:4] == (3, 1, 1, 1234) and a[4:7] == ("handle", "meta", None)
    assert a[9:] == (x, 5, 2, 7)


@pytest.mark.parametrize(
    "second",
    [
        "misaligned tensor",
        "other dtype",
        "int one",
        "int not multiple of 16",
        "int beyond int32",
        "other constexpr",
        "other option",
        "other device",
    ],
)
def test_a_new_specialization_goes_the_slow_way(fake, monkeypatch, second):
    k, fn = fake
    buf = torch.zeros(64)
    k[(1,)](buf, 32, A=2, num_warps=4)
    x, n, kw = buf, 32, {"A": 2, "num_warps": 4}
    if second == "misaligned tensor":
        x = buf[1:]
    elif second == "other dtype":
        x = buf.to(torch.float16)
    elif second == "int one":
        n = 1
    elif second == "int not multiple of 16":
        n = 33
    elif second == "int beyond int32":
        n = 2**33
    elif second == "other constexpr":
        kw["A"] = 3
    elif second == "other option":
        kw["num_warps"] = 8
    else:
        monkeypatch.setattr(_launch_module(), "current_device", lambda: 1)
    k[(1,)](x, n, **kw)
    assert _kinds(fn.log) == ["slow", "slow"]
    k[(1,)](x, n, **kw)  # now compiled for it: direct
    assert _kinds(fn.log) == ["slow", "slow", "direct"]


def test_same_key_other_tensors_and_grid_stay_direct(fake):
    k, fn = fake
    k[(1,)](torch.zeros(64), 32, A=2)
    k[(5,)](torch.ones(16), 32, A=2)  # same dtype / alignment / ints: the same kernel
    assert _kinds(fn.log) == ["slow", "direct"]
    assert fn.log[1][1][0] == 5


def test_keys_are_at_least_as_fine_as_triton():
    L = _launch_module()
    buf = torch.zeros(64)
    keys = [L.arg_key(v) for v in (buf, buf[1:], buf.half(), 1, 16, 17, 2**40, True, False, 1.5)]
    assert len(set(map(repr, keys))) == len(keys)  # no two of them share a key
    assert L.arg_key(1) != L.arg_key(True)  # bool is i1, int 1 a specialized int
    assert L.arg_key(buf) == L.arg_key(torch.ones(8))
    assert L.arg_key(0.5) == L.arg_key(3.0)


def test_changed_global_goes_the_slow_way(fake):
    k, fn = fake
    g = {"KNOB": 1}
    fn.used_global_vals = {("KNOB", 0): (1, g)}
    k[(1,)](torch.zeros(4), 32, A=2)
    k[(1,)](torch.zeros(4), 32, A=2)
    g["KNOB"] = 2  # Triton's own check then raises; the direct path must not hide it
    k[(1,)](torch.zeros(4), 32, A=2)
    assert _kinds(fn.log) == ["slow", "direct", "slow"]


def test_switched_off_by_env(fake, monkeypatch):
    k, fn = fake
    monkeypatch.setenv("NORMK_TRITON_DIRECT_LAUNCH", "0")
    for _ in range(2):
        k[(1,)](torch.zeros(4), 32, A=2)
    assert _kinds(fn.log) == ["slow", "slow"]


def test_interpreted_functions_always_go_the_slow_way():
    L = _launch_module()
    k = L.Kernel(object())  # not a JITFunction: no launcher to call
    assert k.params is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("offset", [0, 1])
def test_direct_launch_is_bitwise_the_slow_one(monkeypatch, dtype, offset):
    import common

    L = _launch_module()
    if L.direct_supported() is not None:
        pytest.skip(L.direct_supported())
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(5 + offset)

    def inputs(shape):
        n = 1
        for s in shape:
            n *= s
        buf = torch.randn(n + offset, device=dev, dtype=dtype, generator=g)
        return buf[offset:].view(shape).requires_grad_(True)  # offset 1: misaligned

    xc, xr = inputs((3, 48, 1000)), inputs((257, 1000))
    gam = torch.randn(48, device=dev, generator=g).requires_grad_(True)
    bet = torch.randn(48, device=dev, generator=g).requires_grad_(True)
    w = torch.randn(1000, device=dev, generator=g).requires_grad_(True)
    dyc = torch.randn(xc.shape, device=dev, dtype=dtype, generator=g)
    dyr = torch.randn(xr.shape, device=dev, dtype=dtype, generator=g)

    def step():
        yc = common.cln(xc, gam, bet, backend="triton")
        gc = torch.autograd.grad(yc, [xc, gam, bet], dyc)
        yr = common.rmsnorm(xr, w, backend="triton")
        gr = torch.autograd.grad(yr, [xr, w], dyr)
        with torch.no_grad():
            ya = common.cln(xc, gam, bet, backend="triton")
        return [yc, *gc, yr, *gr, ya]

    monkeypatch.setenv("NORMK_TRITON_DIRECT_LAUNCH", "0")
    slow = step()
    monkeypatch.setenv("NORMK_TRITON_DIRECT_LAUNCH", "1")
    step()  # compiles nothing new; fills the direct cache
    for _ in range(2):
        fast = step()
        for a, b in zip(slow, fast):
            assert torch.equal(a, b)
