"""Can a cLN forward read x twice and still move only a copy's DRAM bytes?
(GPU only, CuPy; a feasibility probe, session 14, bench/results/NOTES.md 17.)

    python3 -m bench.l2_window

The single-pass forwards hold every tile from its load until its prefix is known, so the tiles
of a round wait for the round's slowest load (NOTES 14.5).  A two-pass forward inside one
persistent block would not: step j reads tile j + L of the block (statistics only: a read, then
the tile aggregate is published) and then tile j again (normalize: read, write y).  The second
read is served from the L2 if what was read since (the window, L x grid x tile bytes) is still
there.  Session 3's split (different blocks for the two reads, no cache hints) found most
re-reads missed; session 12's whole-tensor probe found none hit.  This probe times only the data
movement of that schedule, no arithmetic, tiles of C rows x RB bytes at a stride of T (the cLN
tile of one sequence), tile g = i * B + b, block k takes tiles k, k + grid, ...:

  copy        one read of each tile and its write (the single-pass skeleton without a ring)
  2r          the two-read schedule, plain loads and stores
  2r-hint     first read with an L2 evict_last policy, second read and the store evict_first
              (createpolicy + ld.global.L2::cache_hint, st.global.cs)
  2r-cs       first read plain, second read and the store .cs (evict-first)
  2r-far      the second read of a tile that is never read first (no reuse possible: the
              cost of two DRAM reads)

Times are the median of CUDA-event-timed launches over 4 input copies in rotation; fractions
are the forward's bytes (read x, write y) over the copy bandwidth measured in the same run
(cudaMemcpy device to device of the same tensor, the bench's own copy reference).
"""

from __future__ import annotations

import argparse
import statistics
import sys

KERNEL = r"""
typedef unsigned long long u64;

__device__ __forceinline__ uint4 ld_plain(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 ld_pol(const uint4* p, u64 pol) {
  uint4 v;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
  return v;
}
__device__ __forceinline__ uint4 ld_cs(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ void st_plain(uint4* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};"
               :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ void st_cs(uint4* p, uint4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};"
               :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// mode: 0 copy, 1 2r, 2 2r-hint, 3 2r-cs, 4 2r-far
extern "C" __global__ void __launch_bounds__(256)
window(const uint4* __restrict__ x, const uint4* __restrict__ xfar, uint4* __restrict__ y,
       long long row_v, int C, int rowv, int B, int ntime, int L, int mode,
       unsigned* sink) {
  u64 pol_last, pol_first;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol_last));
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol_first));
  const int ntiles = B * ntime;
  const int grid = gridDim.x;
  unsigned acc = 0;
  uint4 v[NV];
  // the first read (statistics pass) of tile g: xor of its words
  auto first = [&](int g, const uint4* base) {
    const int i = g / B, b = g % B;
    const uint4* t = base + (long long)b * C * row_v + (long long)i * rowv;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int e = threadIdx.x + k * 256, r = e / rowv, c = e % rowv;
      v[k] = mode == 2 ? ld_pol(t + r * row_v + c, pol_last) : ld_plain(t + r * row_v + c);
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
  };
  if (mode != 0 && mode != 4)
    for (int j = 0; j < L; ++j) {
      const int g = blockIdx.x + j * grid;
      if (g < ntiles) first(g, x);
    }
  for (int j = 0;; ++j) {
    const int g = blockIdx.x + j * grid;
    if (g >= ntiles) break;
    if (mode != 0) {
      const int ga = mode == 4 ? g : g + L * grid;
      if (ga < ntiles) first(ga, mode == 4 ? xfar : x);
    }
    const int i = g / B, b = g % B;
    const long long off = (long long)b * C * row_v + (long long)i * rowv;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int e = threadIdx.x + k * 256, r = e / rowv, c = e % rowv;
      const uint4* p = x + off + r * row_v + c;
      v[k] = mode == 2 ? ld_pol(p, pol_first) : mode == 3 ? ld_cs(p) : ld_plain(p);
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int e = threadIdx.x + k * 256, r = e / rowv, c = e % rowv;
      uint4* q = y + off + r * row_v + c;
      if (mode == 2 || mode == 3) st_cs(q, v[k]); else st_plain(q, v[k]);
    }
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}
"""

MODES = {"copy": 0, "2r": 1, "2r-hint": 2, "2r-cs": 3, "2r-far": 4}
SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]


def main(argv: list[str] | None = None) -> int:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row-bytes", default="256", help="comma list of row segment bytes")
    ap.add_argument("--ahead", default="1,2,4", help="comma list of L (tiles ahead per block)")
    ap.add_argument("--bps", default="2,4", help="comma list of blocks per SM")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--reps", type=int, default=12)
    a = ap.parse_args(argv)
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    print(f"{name}, {sms} SMs, cupy {cp.__version__}", flush=True)
    kernels: dict[int, object] = {}

    def kernel(nv: int):
        if nv not in kernels:
            kernels[nv] = cp.RawKernel(KERNEL, "window", options=(f"-DNV={nv}", "-std=c++17"))
        return kernels[nv]

    def timed(fn, reps: int) -> float:
        ts = []
        s, e = cp.cuda.Event(), cp.cuda.Event()
        for r in range(reps + 3):
            s.record()
            fn(r)
            e.record()
            e.synchronize()
            if r >= 3:
                ts.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
        return statistics.median(ts)

    for esize, dname in ((4, "fp32"), (2, "bf16")):
        for shape in SHAPES:
            _probe_shape(cp, kernel, timed, a, sms, esize, dname, shape)
            cp.get_default_memory_pool().free_all_blocks()
    return 0


def _probe_shape(cp, kernel, timed, a, sms: int, esize: int, dname: str, shape) -> None:
    """Every probe of one (B, C, T) shape and element size."""
    B, C, T = shape
    nbytes = B * C * T * esize
    xs = [cp.random.randint(0, 2**31, size=nbytes // 4, dtype=cp.uint32) for _ in range(4)]
    far = cp.random.randint(0, 2**31, size=nbytes // 4, dtype=cp.uint32)
    y = cp.empty_like(xs[0])
    sink = cp.zeros(1, dtype=cp.uint32)

    def memcpy(r: int) -> None:
        cp.cuda.runtime.memcpyAsync(
            y.data.ptr, xs[r % 4].data.ptr, nbytes, 3, cp.cuda.get_current_stream().ptr
        )

    us_copy = timed(memcpy, a.reps)
    bw = 2 * nbytes / (us_copy * 1e-6)
    print(
        f"\n{dname} {(B, C, T)}: {nbytes / 1e6:.1f} MB, memcpy {us_copy:.1f} us "
        f"= {bw / 1e9:.0f} GB/s",
        flush=True,
    )
    for rb in (int(v) for v in a.row_bytes.split(",")):
        rowv = rb // 16
        frames = rb // esize
        per_tile = C * rowv
        if T % frames or per_tile % 256 or per_tile // 256 > 32:
            continue
        nv = per_tile // 256
        ntime = T // frames
        for bps in (int(v) for v in a.bps.split(",")):
            grid = sms * bps
            for mname in a.modes.split(","):
                mode = MODES[mname]
                for L in (int(v) for v in a.ahead.split(",")) if mode in (1, 2, 3) else [0]:

                    def run(
                        r: int, mode=mode, L=L, grid=grid, nv=nv, rowv=rowv, ntime=ntime
                    ) -> None:
                        kernel(nv)(
                            (grid,),
                            (256,),
                            (
                                xs[r % 4],
                                far,
                                y,
                                cp.int64(T * esize // 16),
                                cp.int32(C),
                                cp.int32(rowv),
                                cp.int32(B),
                                cp.int32(ntime),
                                cp.int32(L),
                                cp.int32(mode),
                                sink,
                            ),
                        )

                    us = timed(run, a.reps)
                    window_mb = L * grid * per_tile * 16 / 1e6
                    print(
                        f"  rows {rb:4d} B  tile {per_tile * 16 // 1024:3d} KB  "
                        f"{bps} blk/SM  {mname:8s} L={L}  window {window_mb:6.1f} MB  "
                        f"{us:8.1f} us  {2 * nbytes / (us * 1e-6) / bw:5.2f}",
                        flush=True,
                    )


if __name__ == "__main__":
    sys.exit(main())
