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

}  // namespace normk
