// Deterministic column sums: out[c] = sum_r in[r][c] in a fixed order.
// Used for the per-tile dgamma/dbeta partials of cLN and the per-block dw
// partials of RMSNorm.  Framework-free (see norm_common.cuh).
//
// Grid (ceil(W / 32), S): block (x, s) sums rows [s * seg, (s + 1) * seg) of
// 32 columns.  Its NW warps take every NW-th row (4 independent accumulators
// per thread for memory-level parallelism), then warp 0 adds the NW warp
// sums in order.  With S > 1 a second launch (S = 1) sums the S partial
// rows, or the last block of each column block does (colsum_last_kernel).  The summation order depends only on (K, W, seg, NW): bitwise
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
  A* mid;         // colsum_last_kernel: (S, W) segment sums
  unsigned* cnt;  // colsum_last_kernel: one counter per column block
};

template <bool CG, typename A>
__device__ __forceinline__ A colsum_ld(const A* q) {
  if constexpr (CG)
    return __ldcg(q);
  else
    return *q;
}

// The sum of rows [r0, r1) of column `col` (0 outside [0, W)) in the block's
// fixed order, valid in warp 0.  CG: loads through the L2 only (data other
// blocks wrote during this launch).  Ends with warp 0 reading s_part: a
// second call needs a __syncthreads() first.
template <typename A, int NW, bool CG>
__device__ __forceinline__ A block_colsum(const A* in, long long r0, long long r1, int W, int col,
                                          A (*s_part)[33]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  A a0 = A(0), a1 = A(0), a2 = A(0), a3 = A(0);
  if (col < W) {
    const A* p = in + col;
    long long r = r0 + warp;
    for (; r + 3 * NW < r1; r += 4 * NW) {
      a0 += colsum_ld<CG>(p + r * W);
      a1 += colsum_ld<CG>(p + (r + NW) * W);
      a2 += colsum_ld<CG>(p + (r + 2 * NW) * W);
      a3 += colsum_ld<CG>(p + (r + 3 * NW) * W);
    }
    // At most 3 rows are left: r, r + NW, r + 2 NW.
    if (r < r1) a0 += colsum_ld<CG>(p + r * W);
    if (r + NW < r1) a1 += colsum_ld<CG>(p + (r + NW) * W);
    if (r + 2 * NW < r1) a2 += colsum_ld<CG>(p + (r + 2 * NW) * W);
  }
  s_part[warp][lane] = (a0 + a1) + (a2 + a3);
  __syncthreads();
  A s = A(0);
  if (warp == 0) {
#pragma unroll
    for (int w = 0; w < NW; ++w) s += s_part[w][lane];
  }
  return s;
}

template <typename A>
__device__ __forceinline__ void colsum_store(const ColsumArgs<A>& args, long long row, int col,
                                             A s) {
  const long long o = row * args.ldo;
  if (col < args.split)
    args.out0[o + col] = s;
  else
    args.out1[o + col - args.split] = s;
}

template <typename A, int NW>
__global__ void __launch_bounds__(NW * 32) colsum_kernel(const ColsumArgs<A> args) {
  __shared__ A s_part[NW][33];
  const int col = blockIdx.x * 32 + (threadIdx.x & 31);
  const long long r0 = static_cast<long long>(blockIdx.y) * args.seg;
  const A s = block_colsum<A, NW, false>(args.in, r0, min(args.K, r0 + args.seg), args.W, col,
                                         s_part);
  if (threadIdx.x < 32 && col < args.W) colsum_store(args, blockIdx.y, col, s);
}

// Both stages in one launch (grid (ceil(W / 32), S), S > 1): block (x, s)
// writes its segment's sums to row s of args.mid (S, W); the last block of
// column block x to finish (the counter args.cnt[x], zero at entry and left zero)
// sums the S rows of mid in the order of the second launch of the
// two-launch path, so the result is bitwise the same as that path's.
template <typename A, int NW>
__global__ void __launch_bounds__(NW * 32) colsum_last_kernel(const ColsumArgs<A> args) {
  __shared__ A s_part[NW][33];
  __shared__ bool s_last;
  const int col = blockIdx.x * 32 + (threadIdx.x & 31);
  const long long r0 = static_cast<long long>(blockIdx.y) * args.seg;
  A s = block_colsum<A, NW, false>(args.in, r0, min(args.K, r0 + args.seg), args.W, col, s_part);
  if (threadIdx.x < 32 && col < args.W)
    args.mid[static_cast<long long>(blockIdx.y) * args.W + col] = s;
  // Release: this block's row of mid before its count (threadfence reduction).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = atomicAdd(&args.cnt[blockIdx.x], 1u) == gridDim.y - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();  // acquire: every other block's row of mid is visible
  s = block_colsum<A, NW, true>(args.mid, 0, gridDim.y, args.W, col, s_part);
  if (threadIdx.x < 32 && col < args.W) colsum_store(args, 0, col, s);
  if (threadIdx.x == 0) args.cnt[blockIdx.x] = 0u;
}

}  // namespace normk
