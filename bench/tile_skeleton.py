"""How fast can any single-pass cLN move its tiles?  A load-store skeleton, outside both backends.

A single-pass cLN forward must hold a tile of all C channels x BT frames of one sequence (layout
(B, C, T), time contiguous) until the tile's statistics and prefix are known, then write it.
This script times kernels that do only that data movement, with no statistics, no prefix
and no barriers between blocks, so that the DESIGN.md targets (0.80-0.85 of copy bandwidth for
the forward) can be judged against the access pattern itself rather than against this
project's kernels:

* ``stream``: each block copies one tile (C rows of 16 * PPR bytes) straight from global to
  global, four 16-byte packs in flight per thread: the access pattern alone.
* ``hold``: each block loads its whole tile into shared memory, waits (``__syncthreads``), then
  writes it: the pattern plus the hold that the statistics force.
* ``hold_async``: the same hold, the loads issued all at once with cp.async (every copy of the
  tile in flight, no registers): whether the hold's limit is memory-level parallelism.
* ``hold_bulk``: the same hold moved by the bulk-copy (TMA) unit, one 1-D ``cp.async.bulk`` per
  channel row in and one out, completing on an mbarrier (sm_90): with ``--threads 32`` a block
  is one warp and shared memory alone bounds the tiles in flight per SM.

One block per tile (256 threads unless ``--threads``), tiles in time order within a sequence
(adjacent blocks, adjacent frames).  Timing: CUDA events around 10 back-to-back launches, median
of 7 samples.  The byte count is read + write of the tensor, the same model as the benchmark's
forward, and the reference is the copy bandwidth of the same run
(``bench.timing.copy_bandwidth``).  Inputs are random bytes.  GPU only (CuPy compiles the
kernels with NVRTC):

    python3 -m bench.tile_skeleton [--shapes 16x512x4000] [--ppr 4,8,16] [--threads 256,512]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass

_SRC = r"""
// Where this thread works in its block's tile: pack column j of channel rows
// c0, c0 + rstep, ...; element offset base + c * Lp (packs); ok: column in T.
struct Pos {
  long long base;
  int j, rstep, c0;
  bool ok;
};
__device__ Pos tile_pos(int C, int Lp, int PPR, int ntt) {
  const int b = blockIdx.x / ntt, ti = blockIdx.x % ntt;
  Pos p;
  p.j = threadIdx.x % PPR;
  p.rstep = blockDim.x / PPR;
  p.c0 = threadIdx.x / PPR;
  const int t = ti * PPR + p.j;
  p.ok = t < Lp;
  p.base = (long long)b * C * Lp + t;
  return p;
}

// The hold kernels' second half: the whole tile from shared memory to y.
__device__ void store_tile(uint4* y, const uint4* s, const Pos& p, int C, int Lp, int PPR) {
  if (!p.ok) return;
  for (int c = p.c0; c < C; c += p.rstep) y[p.base + (long long)c * Lp] = s[c * PPR + p.j];
}

extern "C" __global__ void tile_stream(const uint4* __restrict__ x, uint4* __restrict__ y,
                                       int C, int Lp, int PPR, int ntt) {
  const Pos p = tile_pos(C, Lp, PPR, ntt);
  if (!p.ok) return;
  const int rstep = p.rstep;
  const long long base = p.base;
  int c = p.c0;
  for (; c + 3 * rstep < C; c += 4 * rstep) {
    const uint4 a0 = x[base + (long long)c * Lp];
    const uint4 a1 = x[base + (long long)(c + rstep) * Lp];
    const uint4 a2 = x[base + (long long)(c + 2 * rstep) * Lp];
    const uint4 a3 = x[base + (long long)(c + 3 * rstep) * Lp];
    y[base + (long long)c * Lp] = a0;
    y[base + (long long)(c + rstep) * Lp] = a1;
    y[base + (long long)(c + 2 * rstep) * Lp] = a2;
    y[base + (long long)(c + 3 * rstep) * Lp] = a3;
  }
  for (; c < C; c += rstep) y[base + (long long)c * Lp] = x[base + (long long)c * Lp];
}

extern "C" __global__ void tile_hold(const uint4* __restrict__ x, uint4* __restrict__ y,
                                     int C, int Lp, int PPR, int ntt) {
  extern __shared__ uint4 s[];
  const Pos p = tile_pos(C, Lp, PPR, ntt);
  const int rstep = p.rstep, j = p.j;
  const long long base = p.base;
  int c = p.c0;
  if (p.ok) {
    for (; c + 3 * rstep < C; c += 4 * rstep) {
      const uint4 a0 = x[base + (long long)c * Lp];
      const uint4 a1 = x[base + (long long)(c + rstep) * Lp];
      const uint4 a2 = x[base + (long long)(c + 2 * rstep) * Lp];
      const uint4 a3 = x[base + (long long)(c + 3 * rstep) * Lp];
      s[c * PPR + j] = a0;
      s[(c + rstep) * PPR + j] = a1;
      s[(c + 2 * rstep) * PPR + j] = a2;
      s[(c + 3 * rstep) * PPR + j] = a3;
    }
    for (; c < C; c += rstep) s[c * PPR + j] = x[base + (long long)c * Lp];
  }
  __syncthreads();
  store_tile(y, s, p, C, Lp, PPR);
}

// hold, with every copy of the tile in flight at once (cp.async, no registers).
extern "C" __global__ void tile_hold_async(const uint4* __restrict__ x, uint4* __restrict__ y,
                                           int C, int Lp, int PPR, int ntt) {
  extern __shared__ uint4 s[];
  const Pos p = tile_pos(C, Lp, PPR, ntt);
  if (p.ok) {
    for (int c = p.c0; c < C; c += p.rstep) {
      const unsigned d = (unsigned)__cvta_generic_to_shared(s + c * PPR + p.j);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d),
                   "l"(x + p.base + (long long)c * Lp) : "memory");
    }
  }
  asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  store_tile(y, s, p, C, Lp, PPR);
}

// hold, moved by the bulk-copy (TMA) unit: each channel row of the tile is one 1-D
// cp.async.bulk into shared memory, completing on one mbarrier, and one bulk store back.
// No thread holds data or issues a 16-byte access, so a small block (one warp) can keep a
// whole tile in flight and many tiles fit an SM (shared memory is the only limit).
extern "C" __global__ void tile_hold_bulk(const uint4* __restrict__ x, uint4* __restrict__ y,
                                          int C, int Lp, int PPR, int ntt) {
  extern __shared__ __align__(128) uint4 s[];
  __shared__ __align__(8) unsigned long long bar;
  const int b = blockIdx.x / ntt, ti = blockIdx.x % ntt;
  const int t0 = ti * PPR;
  const int packs = min(PPR, Lp - t0);
  const unsigned row_bytes = (unsigned)packs * 16u;
  const long long base = (long long)b * C * Lp + t0;
  const unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sbar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sbar),
                 "r"(row_bytes * (unsigned)C) : "memory");
  __syncthreads();  // the expected bytes are set before any copy can complete
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(s + c * PPR);
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
        ::"r"(d), "l"(x + base + (long long)c * Lp), "r"(row_bytes), "r"(sbar) : "memory");
  }
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(sbar) : "memory");
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const unsigned src = (unsigned)__cvta_generic_to_shared(s + c * PPR);
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 ::"l"(y + base + (long long)c * Lp), "r"(src), "r"(row_bytes) : "memory");
  }
  asm volatile("cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 0;" ::: "memory");
}
"""

THREADS = 256  # default threads per block
CALLS = 10  # launches per timed sample
MODES = ("stream", "hold", "hold_async", "hold_bulk")
MAX_SMEM = 200 * 1024  # a hold tile above this does not fit an H200 SM (228 KB, one block)


@dataclass(frozen=True)
class Case:
    shape: tuple[int, int, int]  # (B, C, T)
    elem: int  # bytes per element (4: fp32, 2: bf16)
    ppr: int  # 16-byte packs per channel row of a tile
    mode: str  # one of MODES
    threads: int = THREADS

    @property
    def frames(self) -> int:  # BT
        return self.ppr * 16 // self.elem

    @property
    def smem(self) -> int:
        return self.shape[1] * self.ppr * 16 if self.mode != "stream" else 0


def plan(
    shapes: list[tuple[int, int, int]],
    pprs: list[int],
    modes: tuple[str, ...] = MODES,
    threads: tuple[int, ...] = (THREADS,),
) -> list[Case]:
    """Every (shape, dtype, PPR, mode, threads) that is legal: T a whole number of packs, PPR
    dividing the block, a hold tile within MAX_SMEM."""
    out = []
    for shape in shapes:
        for elem in (4, 2):
            if shape[2] * elem % 16:
                continue
            for ppr in pprs:
                for mode in modes:
                    for nt in threads:
                        case = Case(shape, elem, ppr, mode, nt)
                        # hold_bulk: a thread issues whole rows, any block size works.
                        fits = nt % ppr == 0 or mode == "hold_bulk"
                        if fits and case.smem <= MAX_SMEM:
                            out.append(case)
    return out


def _parse_shapes(text: str) -> list[tuple[int, int, int]]:
    shapes = []
    for part in text.split(","):
        b, c, t = (int(v) for v in part.lower().split("x"))
        shapes.append((b, c, t))
    return shapes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="16x512x4000,4x256x16000,2x128x64000")
    ap.add_argument("--ppr", default="4,8,16,32,64", help="16-byte packs per tile row")
    ap.add_argument("--reps", type=int, default=7, help="timed samples per case")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--threads", default=str(THREADS), help="threads per block, e.g. 256,512")
    args = ap.parse_args(argv)

    import cupy
    import torch

    from bench.timing import copy_bandwidth

    dev = torch.device("cuda")
    cases = plan(
        _parse_shapes(args.shapes),
        [int(p) for p in args.ppr.split(",")],
        tuple(args.modes.split(",")),
        tuple(int(t) for t in args.threads.split(",")),
    )
    mod = cupy.RawModule(code=_SRC, options=("-std=c++17",))
    kernels = {m: mod.get_function(f"tile_{m}") for m in MODES}
    for m in MODES[1:]:
        kernels[m].max_dynamic_shared_size_bytes = MAX_SMEM
    bw = copy_bandwidth(dev)
    print(f"copy bandwidth {bw.gbps:.0f} GB/s ({bw.method}); torch {torch.__version__}")
    print(
        f"{'(B, C, T)':>18} {'dtype':>5} {'PPR':>3} {'BT':>4} {'row B':>5} {'mode':>10} "
        f"{'thr':>4} {'us':>8} {'GB/s':>6} {'frac':>5}"
    )
    for case in cases:
        b, c, t = case.shape
        nbytes = b * c * t * case.elem
        x = torch.empty(nbytes, dtype=torch.uint8, device=dev).random_(0, 256)
        y = torch.empty_like(x)
        xc, yc = cupy.asarray(x), cupy.asarray(y)
        lp = t * case.elem // 16
        ntt = -(-lp // case.ppr)
        grid, params = (
            (b * ntt,),
            (xc, yc, cupy.int32(c), cupy.int32(lp), cupy.int32(case.ppr), cupy.int32(ntt)),
        )
        kern = kernels[case.mode]

        def launch(kern=kern, grid=grid, params=params, case=case) -> None:
            kern(grid, (case.threads,), params, shared_mem=case.smem)

        launch()
        torch.cuda.synchronize()
        if not torch.equal(x, y):  # the skeleton must really copy every byte
            raise SystemExit(f"{case}: output differs from input")
        y.zero_()
        # Samples of CALLS back-to-back launches: the GPU's queue stays ahead of the host, so
        # no launch latency is inside the events.
        ms = []
        for _ in range(args.reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(CALLS):
                launch()
            e.record()
            e.synchronize()
            ms.append(s.elapsed_time(e) / CALLS)
        us = statistics.median(ms) * 1e3
        gbps = 2 * nbytes / (us * 1e-6) / 1e9
        dtype = "fp32" if case.elem == 4 else "bf16"
        print(
            f"{str(case.shape):>18} {dtype:>5} {case.ppr:>3} {case.frames:>4} "
            f"{case.ppr * 16:>5} {case.mode:>10} {case.threads:>4} {us:8.1f} {gbps:6.0f} "
            f"{gbps / bw.gbps:5.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
