// cLN forward, one block per tile, the tile held in shared memory: the
// "hold" pattern of bench/tile_skeleton.py, which moved data at 0.82-0.88 of
// copy bandwidth (fp32) where this project's streaming kernel's own
// load-store skeleton reached 0.74-0.78 (bench/results/NOTES.md 9.5, 7.2).
// Framework-free (see norm_common.cuh).
//
// x is (B, C, L), time contiguous.  A tile is all C channels x BT = PPR * V
// frames of one sequence: C rows of PPR 16-byte packs (PPR 8: 128-byte row
// segments, whole lines).  Block k (NT = 256 threads) takes ticket k, i.e.
// tile g = k (g = i * B + b, as in cln_kernels.cuh: a block only ever waits
// on blocks that started before it), and
//   1. copies the tile into shared memory with cp.async (every copy in
//      flight at once; thread (r, j) takes pack column j of rows r, r + RPS,
//      ...: a warp's copies are 32 consecutive packs of shared memory, 4
//      (PPR 8) whole 128-byte lines of global memory), gamma and beta beside
//      it;
//   2. per-frame statistics from shared memory: each thread takes its own
//      rows of its pack column, exact two-pass (mean, then M2 about it) over
//      16-byte shared loads (V frames per load, bf16 too), then the partials
//      are Chan-combined across the lanes of one column (shuffles) and the
//      warps (fixed order): (mean, M2) of every frame over the C channels;
//   3. warp 0: the in-tile scan, the tile aggregate's publication and the
//      fixed-order two-level prefix of cln_kernels.cuh (the same functions:
//      bitwise deterministic), mean / rstd out;
//   4. y = (x - mu_t) * rstd_t * gamma + beta from shared memory, 16-byte
//      stores.
// While a block waits for its prefix (3), the SM's other 2-3 blocks load,
// reduce and store: the hold that the statistics force costs shared memory,
// not bandwidth.
#pragma once

#include "cln_kernels.cuh"

namespace normk {

constexpr int kHoldThreads = 256;
// Register cap 80 (3 blocks of 256): at 4 blocks (64 registers) ptxas
// spilled 4-16 bytes (warp 0's prefix reduction) in every type but fp32
// PPR 8, and a 64 KB tile allows 3 blocks per SM anyway.  fp64 spilled 4-12
// bytes at 80 registers: 2 blocks (128).
template <typename T>
constexpr int hold_min_blocks() {
  return sizeof(T) == 8 ? 2 : 3;
}

template <typename T, int PPR_>
struct HoldGeom {
  static constexpr int V = PackInfo<T>::V;
  static constexpr int PPR = PPR_;          // 16-byte packs per channel row of a tile
  static constexpr int BT = PPR * V;        // frames per tile
  static constexpr int NT = kHoldThreads;
  static constexpr int NW = NT / 32;
  static constexpr int RPS = NT / PPR;      // rows per step (threads per pack column)
  static constexpr int FPL = (BT + 31) / 32;  // frames per lane of the warp scan
  static_assert(PPR >= 1 && PPR <= 32 && 32 % PPR == 0 && BT <= NT, "bad hold tile shape");
};

// Dynamic shared memory of one hold block: the tile (C x PPR packs), then
// gamma[C] and beta[C] as A.
template <typename T>
__host__ __device__ constexpr long long hold_smem_bytes(long long C, int ppr) {
  return C * ppr * 16 + 2 * C * static_cast<long long>(sizeof(acc_t<T>));
}

template <typename T, typename P, int PPR>
__global__ void __launch_bounds__(kHoldThreads, hold_min_blocks<T>())
    cln_fwd_hold_kernel(const ClnFwdArgs<T, P> args) {
  using A = acc_t<T>;
  using G = HoldGeom<T, PPR>;
  constexpr int NW = G::NW, V = G::V, BT = G::BT, RPS = G::RPS;

  __shared__ int s_ticket;
  __shared__ A s_wn[NW][PPR];            // rows of each warp's partial (per pack column)
  __shared__ A s_wm[NW][BT], s_wM[NW][BT];  // each warp's partial (mean, M2) per frame
  __shared__ A s_mu[BT];  // frame mean -> in-tile scan -> mu_t
  __shared__ A s_m2[BT];  // frame M2 -> in-tile scan -> rstd_t

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Timing diagnostic (args.diag, bench/diag_cln_stream.py; outputs wrong
  // above 0): 1 = no cross-tile wait, 2 = also no statistics, 3 = also
  // blockIdx instead of the ticket.
  const int diag = args.diag;
  if (tid == 0) s_ticket = diag >= 3 ? static_cast<int>(blockIdx.x) : atomicAdd(args.ticket, 1);
  __syncthreads();
  const int tile = s_ticket;  // ticket order, not blockIdx (cln_kernels.cuh)

  const int C = args.C, L = args.L;
  const int b = tile % args.B;
  const int t0 = (tile / args.B) * BT;
  const int j = tid % PPR, r0 = tid / PPR;
  const int tt = t0 + j * V;  // first frame of this thread's pack column
  const int nvalid = L - tt;  // <= 0: the column lies past the end (last tile)
  // 16-byte copies: L % V == 0 and x, y aligned, so a pack is whole iff nvalid > 0.
  const bool vec = args.vec != 0;
  const long long bofs = static_cast<long long>(b) * C * L;
  uint4* const s_x = dynamic_smem<uint4>();
  A* const s_g = reinterpret_cast<A*>(s_x + static_cast<long long>(C) * PPR);
  A* const s_b = s_g + C;

  // 1. The tile (zeros past L), gamma and beta.
  {
    const T* xc = args.x + bofs + tt;
    if (vec) {
      for (int c = r0; c < C; c += RPS)
        cp_async<16>(s_x + c * PPR + j, nvalid > 0 ? xc + static_cast<long long>(c) * L : args.x,
                     nvalid > 0);
      cp_async_commit();
    } else {
      for (int c = r0; c < C; c += RPS)
        s_x[c * PPR + j] = nvalid > 0
                               ? load_pack<T, Ld::kNoL1>(xc + static_cast<long long>(c) * L,
                                                         false, nvalid)
                               : make_uint4(0u, 0u, 0u, 0u);
    }
    for (int c = tid; c < C; c += G::NT) {
      s_g[c] = args.gamma ? load_param<P, A>(args.gamma, c) : A(1);
      s_b[c] = args.beta ? load_param<P, A>(args.beta, c) : A(0);
    }
    if (vec) cp_async_wait<0>();
  }
  __syncthreads();

  if (diag < 2) {  // (diag: no statistics)
    // 2. Frame statistics.  This thread's rows first, exact two-pass.
    A m[V], q[V];
    A n = A(0);
    #pragma unroll
    for (int k = 0; k < V; ++k) m[k] = A(0), q[k] = A(0);
    for (int c = r0; c < C; c += RPS) {
      const uint4 u = s_x[c * PPR + j];
      #pragma unroll
      for (int k = 0; k < V; ++k) m[k] += Elem<T>::get(u, k);
      n += A(1);
    }
    if (n > A(0)) {
      const A inv = A(1) / n;
      #pragma unroll
      for (int k = 0; k < V; ++k) m[k] *= inv;
      for (int c = r0; c < C; c += RPS) {
        const uint4 u = s_x[c * PPR + j];
        #pragma unroll
        for (int k = 0; k < V; ++k) {
          const A d = Elem<T>::get(u, k) - m[k];
          q[k] += d * d;
        }
      }
    }
    // The lanes of one pack column (lane ^ PPR, ^ 2 PPR, ...): Chan combine.
    #pragma unroll
    for (int o = PPR; o < 32; o <<= 1) {
      const A on = __shfl_xor_sync(kFullMask, n, o);
      A nn = n;
      #pragma unroll
      for (int k = 0; k < V; ++k) {
        const A om = __shfl_xor_sync(kFullMask, m[k], o);
        const A oM = __shfl_xor_sync(kFullMask, q[k], o);
        // The lower lane's rows first, on both lanes (the same result on both).
        if (lane & o)
          chan_combine(on, om, oM, n, m[k], q[k], nn, m[k], q[k]);
        else
          chan_combine(n, m[k], q[k], on, om, oM, nn, m[k], q[k]);
      }
      n = nn;
    }
    if (lane < PPR) {
      s_wn[warp][lane] = n;
      #pragma unroll
      for (int k = 0; k < V; ++k) {
        s_wm[warp][lane * V + k] = m[k];
        s_wM[warp][lane * V + k] = q[k];
      }
    }
    __syncthreads();
    if (tid < BT) {  // the warps in order
      A fn = A(0), fm = A(0), fM = A(0);
      #pragma unroll
      for (int w = 0; w < NW; ++w)
        chan_combine(fn, fm, fM, s_wn[w][tid / V], s_wm[w][tid], s_wM[w][tid], fn, fm, fM);
      s_mu[tid] = fm;
      s_m2[tid] = fM;
    }
    __syncthreads();

    // 3. Warp 0: in-tile scan, publication, cross-tile prefix, mean / rstd.
    if (warp == 0) {
      if (diag >= 1)
        cln_fwd_tile_publish<G>(args, tile, s_mu, s_m2);
      else
        cln_fwd_scan_body<G>(args, tile, s_mu, s_m2);
    }
  }
  __syncthreads();

  // 4. The output.
  if (nvalid <= 0) return;
  A mu[V], rs[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const bool ok = k < nvalid;
    mu[k] = ok ? s_mu[j * V + k] : A(0);
    rs[k] = ok ? s_m2[j * V + k] : A(0);
  }
  T* const yc = args.y + bofs + tt;
  for (int c = r0; c < C; c += RPS) {
    const uint4 u = s_x[c * PPR + j];
    const A gm = s_g[c], bt = s_b[c];
    A out[V];
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = (Elem<T>::get(u, k) - mu[k]) * rs[k] * gm + bt;
    store_pack<T>(yc + static_cast<long long>(c) * L, out, vec, nvalid);
  }
}

}  // namespace normk
