"""Where does host time go per call?  (GPU only; a diagnosis tool.)

    python3 -m bench.profile_overhead [backend]

Times, with the GPU kept busy so only host cost is visible, each layer of a
call: the raw kernel wrapper, common.* without grad, and forward + backward,
then prints a cProfile of the slowest layer.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time

import torch

import common
from common.registry import get_backend


def host_us(fn, n=300) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return host


def main() -> int:
    name = sys.argv[1] if len(sys.argv) > 1 else "triton"
    K = get_backend(name).kernels()
    dev = torch.device("cuda")
    x = torch.randn(2048, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.ones(4096, device=dev, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    r = torch.empty(2048, device=dev)
    xr = x.clone().requires_grad_(True)
    wr = w.clone().requires_grad_(True)
    dy = torch.randn_like(x)
    xc = torch.randn(80, 64, 301, device=dev)
    yc = torch.empty_like(xc)
    m = torch.empty(80, 301, device=dev)
    rs = torch.empty(80, 301, device=dev)
    m2 = torch.empty(80, device=dev)
    xcr = xc.clone().requires_grad_(True)
    dyc = torch.randn_like(xc)

    def step_rms():
        torch.autograd.grad(common.rmsnorm(xr, wr, backend=name), [xr, wr], dy)

    def step_cln():
        torch.autograd.grad(common.cln(xcr, backend=name), [xcr], dyc)

    cases = {
        "torch empty_like": lambda: torch.empty_like(x),
        "torch zeros(64)": lambda: torch.zeros(64, device=dev),
        "F.rms_norm": lambda: torch.nn.functional.rms_norm(x, (4096,), w, 1e-6),
        "raw rmsnorm_forward": lambda: K.rmsnorm_forward(x, w, 1e-6, y, r),
        "raw cln_forward": lambda: K.cln_forward(xc, None, None, 1e-8, None, yc, m, rs, m2),
    }
    with torch.no_grad():
        for k, fn in cases.items():
            print(f"{k:28s} host {host_us(fn):8.1f} us/call")
        print(
            f"{'common.rmsnorm no-grad':28s} host "
            f"{host_us(lambda: common.rmsnorm(x, w, backend=name)):8.1f} us/call"
        )
        print(
            f"{'common.cln no-grad':28s} host "
            f"{host_us(lambda: common.cln(xc, backend=name)):8.1f} us/call"
        )
    print(f"{'rmsnorm fwd+bwd':28s} host {host_us(step_rms, 100):8.1f} us/call")
    print(f"{'cln fwd+bwd':28s} host {host_us(step_cln, 100):8.1f} us/call")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(50):
        step_rms()
        step_cln()
    torch.cuda.synchronize()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
