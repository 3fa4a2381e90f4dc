// Deterministic column sums: out[c] = sum_r in[r][c] in a fixed order.
// Used for the per-tile dgamma/dbeta partials of cLN and the per-block dw
// partials of RMSNorm.  Framework-free (see norm_common.cuh).
//
// Grid (ceil(W / 32), S): block (x, s) sums rows [s * seg, (s + 1) * seg) of
// 32 columns.  Its NW warps take every NW-th row (4 independent accumulators
// per thread for memory-level parallelism), then warp 0 adds the NW warp
// sums in order.  With S > 1 a second launch (S = 1) sums the S partial
// rows.  The summation order depends only on (K, W, seg, NW): bitwise
// reproducible.
#pragma once

#include "norm_common.cuh"

namespace normk {

template <typename A>
struct ColsumArgs {
  const A* in;   // (K, W)
  long long K;
  int W;
  long long seg;  // rows per block row s
  A* out0;       // columns [0, split): out0[s * ldo + c]
  A* out1;       // columns [split, W): out1[s * ldo + c - split]; may equal out0 + split
  int split;
  long long ldo;
};

template <typename A, int NW>
__global__ void __launch_bounds__(NW * 32) colsum_kernel(const ColsumArgs<A> args) {
  pdl_chain_start();  // behind the cLN backward (`pdl`): waits for its partials
  __shared__ A s_part[NW][33];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int col = blockIdx.x * 32 + lane;
  const long long r0 = static_cast<long long>(blockIdx.y) * args.seg;
  const long long r1 = min(args.K, r0 + args.seg);
  A a0 = A(0), a1 = A(0), a2 = A(0), a3 = A(0);
  if (col < args.W) {
    const A* p = args.in + col;
    long long r = r0 + warp;
    for (; r + 3 * NW < r1; r += 4 * NW) {
      a0 += p[r * args.W];
      a1 += p[(r + NW) * args.W];
      a2 += p[(r + 2 * NW) * args.W];
      a3 += p[(r + 3 * NW) * args.W];
    }
    // At most 3 rows are left: r, r + NW, r + 2 NW.
    if (r < r1) a0 += p[r * args.W];
    if (r + NW < r1) a1 += p[(r + NW) * args.W];
    if (r + 2 * NW < r1) a2 += p[(r + 2 * NW) * args.W];
  }
  s_part[warp][lane] = (a0 + a1) + (a2 + a3);
  __syncthreads();
  if (warp == 0 && col < args.W) {
    A s = A(0);
#pragma unroll
    for (int w = 0; w < NW; ++w) s += s_part[w][lane];
    const long long o = static_cast<long long>(blockIdx.y) * args.ldo;
    if (col < args.split)
      args.out0[o + col] = s;
    else
      args.out1[o + col - args.split] = s;
  }
}

// Zero `n4` 4-byte words at p (16-byte aligned): a cLN call's workspace flags, at the head
// of its chain where the launcher chains by programmatic dependent launch (`pdl`; else a
// cudaMemsetAsync).  Launched itself as a dependent of whatever precedes it in the stream,
// it lets the cLN kernel launch first (that one waits for these stores before it reads
// anything), then waits for the launch before it: the workspace may be memory that launch
// still uses (the caching allocator), and the cLN kernel reads its inputs only after its
// own wait, which returns once this kernel, and so the one before it, has finished.
struct ZeroArgs {
  unsigned* p;
  long long n4;
};
__global__ void __launch_bounds__(256) zero_words_kernel(const ZeroArgs args) {
  pdl_chain_start();
  const long long n16 = args.n4 / 4;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long t0 = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint4* q = reinterpret_cast<uint4*>(args.p);
  for (long long i = t0; i < n16; i += stride) q[i] = make_uint4(0u, 0u, 0u, 0u);
  for (long long i = 4 * n16 + t0; i < args.n4; i += stride) args.p[i] = 0u;
}

}  // namespace normk
