// Cumulative layer norm (cLN), forward and backward, as single-pass
// decoupled look-back scans over time.  Framework-free (see norm_common.cuh).
//
// x is (B, C, L) contiguous: time is the unit-stride dimension.  A block owns
// one tile of BT frames x all C channels of one batch item:
//
//   * TPR threads cover one channel row of the tile with one 16-byte pack
//     each, so BT = TPR * V frames.  TPR = 8 (32 fp32, 64 fp16/bf16, 16 fp64
//     frames) makes every row segment one 128-byte line: whole sectors,
//     however the channels are strided (by L elements); TPR = 4 (64-byte
//     segments) is used where 8 would not fit the registers (see the tables
//     in csrc/cln_common.h).
//   * NT = 224 data threads (7 warps) cover RPP = 28 rows per pass; each keeps
//     R packs (R rows) in registers, so a "chunk" is CR = 28 * R channels
//     (R = 19: 532 >= 512 channels in 76 registers of data).  When
//     C <= CR the tile is read from DRAM exactly once and y is written from
//     registers; for larger C the kernel loops over channel chunks and the
//     output pass re-reads the tile (from L2: it was read microseconds ago).
//   * One more warp, the scan warp, holds no tile data.  It does the frame
//     scan and the look-back.  Keeping that code off the data warps' path is
//     what lets 64-76 registers of tile data fit without spills: with the
//     scan inlined in warp 0 (an earlier version), ptxas needed 135
//     registers for fp32 with 16 packs per thread and 164 for fp64 (both
//     spilled under a 128 cap), because the tile stayed live across the
//     look-back.  Data warps and the scan warp meet
//     at named barriers (barrier.sync, non-.aligned: different code paths).
//     7 + 1 = 8 warps, not 8 + 1: the register file is split over the 4 SM
//     sub-partitions by warp, and 2 blocks of 9 warps put 5 warps on one of
//     them, capping every thread at 96 registers instead of 128.
//
// Forward per tile: exact per-frame mean and M2 over the channels (two
// passes over registers: the sum, then the squared deviations from the
// frame mean), an inclusive Chan-combine scan over the BT frames (scan warp,
// shuffles), publication of the tile aggregate, a look-back over the
// predecessor tiles of the same batch item (32 at a time, one per lane) for
// the exclusive prefix, publication of the inclusive prefix, then
// y = (x - mu_t) * rstd_t * gamma + beta.  The streaming state (count, mean0,
// M2_0) is the inclusive prefix of a virtual tile -1.
//
// Tiles get their ids from an atomic ticket counter (not blockIdx), so a
// block only ever waits on tiles whose blocks already started: no deadlock
// whatever the scheduler does.  Tickets are batch-fastest (b = k % B), so the
// first B tickets are the first tiles of every batch item, which need nobody.
//
// Backward is the same machine run as a suffix scan (tickets from the last
// tile backwards) over (a_t, b_t, b_t * (mu_t - K)) with K = mean[b, 0], per
// DESIGN.md and common/eager.py:
//   dx = r * g - S_a - (x - K) * S_b + P.
// The backward keeps x in registers, and dy too where it fits (KEEP_DY);
// otherwise dy is prefetched into L1 and read again for dx.
// dgamma / dbeta: per-tile, per-channel partials written to a [tiles][2][C]
// buffer, reduced afterwards in a fixed order (reduce_kernels.cuh): no float
// atomics, bitwise reproducible.
//
// Note: the look-back combines predecessor tiles in whatever grouping it
// finds them published (inclusive vs aggregate), so mean/rstd/y (and dx) may
// differ between runs in the last bits; dgamma/dbeta do not.
#pragma once

#include "norm_common.cuh"

namespace normk {

// Geometry of a cLN tile for element type T.
template <typename T, int TPR_, int R_>
struct ClnGeom {
  static constexpr int NT = 224;  // data threads (7 warps)
  static constexpr int NTT = NT + 32;  // block size: data threads + the scan warp
  static constexpr int R = R_;
  static constexpr int V = PackInfo<T>::V;
  static constexpr int TPR = TPR_;  // threads per channel row (8: one 128 B line)
  static constexpr int BT = V * TPR;  // frames per tile
  static constexpr int RPP = NT / TPR;  // rows per pass
  static constexpr int CR = R * RPP;  // channels held in registers per chunk
  static constexpr int NW = NT / 32;  // data warps
  static constexpr int FPL = (BT + 31) / 32;  // frames per lane in the warp scan
  static_assert(NT % 32 == 0 && 32 % TPR == 0, "bad block shape");
  static_assert(BT <= 64, "warp scan handles at most 64 frames");
};

// Named barrier ids (0 is __syncthreads).
constexpr int kBarData = 1;  // the NT data threads
constexpr int kBarAll = 2;   // data threads + scan warp: hand-offs


template <typename T, typename P>
struct ClnFwdArgs {
  using A = acc_t<T>;
  const T* x;
  const P* gamma;  // nullable
  const P* beta;   // nullable
  T* y;
  A* mean;     // (B, L)
  A* rstd;     // (B, L)
  A* m2_last;  // (B,)
  const long long* count0;  // (B,) nullable: values before this chunk
  const A* mean0;            // (B,) nullable
  const A* m20;              // (B,) nullable
  int B, C, L;
  int ntiles;   // tiles per batch item = ceil(L / BT)
  int nchunks;  // ceil(C / CR)
  int vec;      // 16-byte loads legal: L % V == 0 and x / y 16-byte aligned
  A eps;
  int* ticket;  // zeroed before launch
  int* flags;   // B * ntiles, zeroed before launch
  A* slots;     // B * ntiles * 8
};

template <typename T, typename P>
struct ClnBwdArgs {
  using A = acc_t<T>;
  const T* dy;
  const T* x;
  const P* gamma;  // nullable (= 1)
  const A* mean;   // (B, L)
  const A* rstd;   // (B, L)
  const long long* count;  // (B,) nullable (= 0)
  T* dx;
  A* partial;  // (B * ntiles, 2, C): per-tile sum dy * xhat, sum dy; nullable
  int B, C, L;
  int ntiles;
  int nchunks;
  int vec;
  int* ticket;
  int* flags;
  A* slots;
};

// ---------------------------------------------------------------------------
// Sum NA per-frame arrays over the channel rows (data threads only).  Each
// thread holds v[a][k] for frames tc * V + k; lanes with the same tc
// (lane % 8) hold different rows.  Result: out[a][f] in shared memory for
// f < BT, summed over warps in a fixed order; readable by all data threads
// on return.
// ---------------------------------------------------------------------------
template <typename G, int NA, typename A>
__device__ __forceinline__ void cln_frame_reduce(A (&v)[NA][G::V], A (*red)[NA][G::BT],
                                                 A (*out)[G::BT]) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
#pragma unroll
  for (int a = 0; a < NA; ++a)
#pragma unroll
    for (int k = 0; k < G::V; ++k)
#pragma unroll
      for (int o = G::TPR; o < 32; o <<= 1) v[a][k] += __shfl_xor_sync(kFullMask, v[a][k], o);
  if (lane < G::TPR) {
#pragma unroll
    for (int a = 0; a < NA; ++a)
#pragma unroll
      for (int k = 0; k < G::V; ++k) red[warp][a][lane * G::V + k] = v[a][k];
  }
  named_barrier(kBarData, G::NT);
  if (tid < G::BT) {
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      A s = A(0);
#pragma unroll
      for (int w = 0; w < G::NW; ++w) s += red[w][a][tid];
      out[a][tid] = s;
    }
  }
  named_barrier(kBarData, G::NT);
}

// Load the R packs of channel chunk `c0` for this thread (zeros outside).
template <typename G, Ld H, typename T>
__device__ __forceinline__ void cln_load_chunk(uint4 (&pk)[G::R], const T* base, int C, int L,
                                               int c0, int tr, int tt, bool vec, int nvalid) {
#pragma unroll
  for (int r = 0; r < G::R; ++r) {
    const int c = c0 + r * G::RPP + tr;
    pk[r] = (c < C && nvalid > 0)
                ? load_pack<T, H>(base + static_cast<long long>(c) * L + tt, vec, nvalid)
                : make_uint4(0u, 0u, 0u, 0u);
  }
}

// ---------------------------------------------------------------------------
// Forward, scan warp: frame scan + look-back.  In: s_mu / s_m2 hold each
// frame's (mean, M2) over the C channels.  Out: s_mu / s_m2 hold mu_t and
// rstd_t; mean / rstd / m2_last are written.
// ---------------------------------------------------------------------------
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_fwd_scan_warp(const ClnFwdArgs<T, P>& args, int ticket,
                                                  acc_t<T>* s_mu, acc_t<T>* s_m2) {
  using A = acc_t<T>;
  constexpr int BT = G::BT, FPL = G::FPL;
  const int lane = threadIdx.x & 31;
  const int C = args.C, L = args.L;
  const int b = ticket % args.B;
  const int j = ticket / args.B;
  const int t0 = j * BT;

  // Inclusive Chan scan over the frames of the tile: FPL frames per lane
  // sequentially, then a Hillis-Steele shuffle scan over the lane totals.
  const A Cn = static_cast<A>(C);
  A ln[FPL], lm[FPL], lM[FPL];
  A n = A(0), m = A(0), M = A(0);
#pragma unroll
  for (int i = 0; i < FPL; ++i) {
    const int f = lane * FPL + i;
    const bool ok = f < BT && t0 + f < L;
    chan_combine(n, m, M, ok ? Cn : A(0), ok ? s_mu[f] : A(0), ok ? s_m2[f] : A(0), n, m, M);
    ln[i] = n;
    lm[i] = m;
    lM[i] = M;
  }
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const A on = __shfl_up_sync(kFullMask, n, o);
    const A om = __shfl_up_sync(kFullMask, m, o);
    const A oM = __shfl_up_sync(kFullMask, M, o);
    if (lane >= o) chan_combine(on, om, oM, n, m, M, n, m, M);
  }
  // This lane's exclusive prefix within the tile; the tile aggregate.
  A en = __shfl_up_sync(kFullMask, n, 1);
  A em = __shfl_up_sync(kFullMask, m, 1);
  A eM = __shfl_up_sync(kFullMask, M, 1);
  if (lane == 0) en = em = eM = A(0);
  const A agg_m = __shfl_sync(kFullMask, m, 31);
  const A agg_M = __shfl_sync(kFullMask, M, 31);
  const long long agg_n = static_cast<long long>(__shfl_sync(kFullMask, n, 31));

  // ---- decoupled look-back over the predecessor tiles of batch item b ----
  const long long cnt0 = args.count0 ? args.count0[b] : 0LL;
  const A st_m = (args.mean0 && cnt0 > 0) ? args.mean0[b] : A(0);
  const A st_M = (args.m20 && cnt0 > 0) ? args.m20[b] : A(0);
  const long long tile_n = static_cast<long long>(C) * BT;  // a full predecessor tile
  long long Xn = 0;  // exclusive prefix of this tile
  A Xm = A(0), XM = A(0);
  if (j == 0) {
    Xn = cnt0;
    Xm = st_m;
    XM = st_M;
  } else {
    if (lane == 0) {
      slot_store(args.slots, ticket, 0, agg_m, agg_M, A(0));
      flag_release(args.flags + ticket, kFlagAggregate);
    }
    int pj = j - 1;  // lane 0 examines tile pj, lane i tile pj - i
    while (true) {
      const int tj = pj - lane;
      int fl = kFlagInclusive;  // tj < -1: nothing there (identity)
      long long wn = 0;
      A wm = A(0), wM = A(0);
      if (tj >= 0) {
        const long long kk = static_cast<long long>(tj) * args.B + b;
        fl = flag_wait(args.flags + kk);
        A unused;
        slot_load(args.slots, kk, fl == kFlagInclusive ? 1 : 0, wm, wM, unused);
        wn = fl == kFlagInclusive ? cnt0 + tile_n * (tj + 1) : tile_n;
      } else if (tj == -1) {  // the streaming state: the inclusive prefix of tile -1
        wn = cnt0;
        wm = st_m;
        wM = st_M;
      }
      const unsigned incl = __ballot_sync(kFullMask, fl == kFlagInclusive);
      const int first = incl ? __ffs(incl) - 1 : 32;
      if (lane > first) {
        wn = 0;
        wm = wM = A(0);
      }
      // Reduce the window in order: a higher lane is an earlier tile.
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const long long on = __shfl_down_sync(kFullMask, wn, o);
        const A om = __shfl_down_sync(kFullMask, wm, o);
        const A oM = __shfl_down_sync(kFullMask, wM, o);
        if (lane + o < 32) chan_combine_i(on, om, oM, wn, wm, wM, wn, wm, wM);
      }
      wn = __shfl_sync(kFullMask, wn, 0);
      wm = __shfl_sync(kFullMask, wm, 0);
      wM = __shfl_sync(kFullMask, wM, 0);
      chan_combine_i(wn, wm, wM, Xn, Xm, XM, Xn, Xm, XM);
      if (incl) break;
      pj -= 32;
    }
  }
  if (lane == 0 && j + 1 < args.ntiles) {
    long long in_;
    A im, iM;
    chan_combine_i(Xn, Xm, XM, agg_n, agg_m, agg_M, in_, im, iM);
    slot_store(args.slots, ticket, 1, im, iM, A(0));
    flag_release(args.flags + ticket, kFlagInclusive);
  }

  // Per-frame inclusive statistics: X + (lane prefix + the lane's frames).
#pragma unroll
  for (int i = 0; i < FPL; ++i) {
    const int f = lane * FPL + i;
    const int t = t0 + f;
    if (f < BT && t < L) {
      A tn, tm, tM;
      chan_combine(en, em, eM, ln[i], lm[i], lM[i], tn, tm, tM);
      long long fn;
      A fm, fM;
      chan_combine_i(Xn, Xm, XM, static_cast<long long>(tn), tm, tM, fn, fm, fM);
      // 1 / sqrt rather than rsqrt: correctly rounded, and only once per frame.
      const A r = A(1) / sqrt(fM / static_cast<A>(fn) + args.eps);
      const long long o = static_cast<long long>(b) * L + t;
      args.mean[o] = fm;
      args.rstd[o] = r;
      if (t == L - 1) args.m2_last[b] = fM;
      s_mu[f] = fm;
      s_m2[f] = r;
    }
  }
}

// ---------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------
// MB: blocks per SM for __launch_bounds__; the register cap is
// 65536 / (256 * MB): 128 for 2, 80 for 3, 64 for 4.  The launcher's table
// picks (TPR, R, MB) per dtype so that ptxas reports no spills.
template <typename T, typename P, int TPR, int R, int MB>
__global__ void __launch_bounds__(ClnGeom<T, TPR, R>::NTT, MB)
    cln_fwd_kernel(const ClnFwdArgs<T, P> args) {
  using A = acc_t<T>;
  using G = ClnGeom<T, TPR, R>;
  constexpr int NT = G::NT;
  constexpr int V = G::V, BT = G::BT;

  __shared__ int s_ticket;
  __shared__ A s_red[G::NW][1][BT];
  __shared__ A s_sum[1][BT];
  __shared__ A s_mu[BT];  // chunk mean / frame mean, then mu_t
  __shared__ A s_m2[BT];  // frame M2, then rstd_t

  const int tid = threadIdx.x;
  if (tid == 0) s_ticket = atomicAdd(args.ticket, 1);
  __syncthreads();
  const int ticket = s_ticket;

  if (tid >= NT) {  // the scan warp
    named_barrier(kBarAll, G::NTT);  // frame statistics ready
    cln_fwd_scan_warp<G>(args, ticket, s_mu, s_m2);
    named_barrier(kBarAll, G::NTT);  // mu_t / rstd_t ready
    return;
  }

  const int C = args.C, L = args.L;
  const int b = ticket % args.B;
  const int t0 = (ticket / args.B) * BT;
  const int tr = tid / G::TPR, tc = tid % G::TPR;
  const int tt = t0 + tc * V;  // first frame of this thread's pack
  const int nvalid = L - tt;   // may be <= 0 in the last tile
  const bool vec = args.vec != 0 && nvalid >= V;
  const long long bofs = static_cast<long long>(b) * C * L;
  const T* xb = args.x + bofs;

  uint4 pk[R];
  // Per-frame statistics over the channels (data thread tid < BT owns frame
  // tid), Chan-combined over the chunks in a fixed order.
  A fn = A(0), fm = A(0), fM = A(0);
  for (int ch = 0; ch < args.nchunks; ++ch) {
    const int c0 = ch * G::CR;
    // One chunk keeps its data in registers: x is read exactly once (no L1
    // allocation).  Several chunks re-read the tile: keep it in L2 (.cg).
    if (args.nchunks == 1)
      cln_load_chunk<G, Ld::kNoL1>(pk, xb, C, L, c0, tr, tt, vec, nvalid);
    else
      cln_load_chunk<G, Ld::kCg>(pk, xb, C, L, c0, tr, tt, vec, nvalid);
    const A nc = static_cast<A>(min(G::CR, C - c0));

    A s[1][V];
#pragma unroll
    for (int k = 0; k < V; ++k) s[0][k] = A(0);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int k = 0; k < V; ++k) s[0][k] += Elem<T>::get(pk[r], k);
    cln_frame_reduce<G, 1>(s, s_red, s_sum);
    if (tid < BT) s_mu[tid] = s_sum[0][tid] / nc;
    named_barrier(kBarData, NT);

    // Squared deviations from the chunk's frame mean (exact two-pass M2).
    A mu[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      mu[k] = s_mu[tc * V + k];
      s[0][k] = A(0);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (c0 + r * G::RPP + tr < C) {
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const A d = Elem<T>::get(pk[r], k) - mu[k];
          s[0][k] += d * d;
        }
      }
    }
    cln_frame_reduce<G, 1>(s, s_red, s_sum);
    if (tid < BT) chan_combine(fn, fm, fM, nc, s_mu[tid], s_sum[0][tid], fn, fm, fM);
  }
  // All s_mu reads of the loop happened before its last frame reduce.
  if (tid < BT) {
    s_mu[tid] = fm;
    s_m2[tid] = fM;
  }
  named_barrier(kBarAll, G::NTT);  // frame statistics ready
  named_barrier(kBarAll, G::NTT);  // mu_t / rstd_t ready

  // ---- y = (x - mu_t) * rstd_t * gamma + beta ----
  A mu[V], rs[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const bool ok = tt + k < L;
    mu[k] = ok ? s_mu[tc * V + k] : A(0);
    rs[k] = ok ? s_m2[tc * V + k] : A(0);
  }
  T* yb = args.y + bofs;
  for (int ch = 0; ch < args.nchunks; ++ch) {
    const int c0 = ch * G::CR;
    if (args.nchunks > 1) cln_load_chunk<G, Ld::kCg>(pk, xb, C, L, c0, tr, tt, vec, nvalid);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int c = c0 + r * G::RPP + tr;
      if (c < C && nvalid > 0) {
        const A gm = args.gamma ? load_param<P, A>(args.gamma, c) : A(1);
        const A bt = args.beta ? load_param<P, A>(args.beta, c) : A(0);
        A out[V];
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = (Elem<T>::get(pk[r], k) - mu[k]) * rs[k] * gm + bt;
        store_pack<T>(yb + static_cast<long long>(c) * L + tt, out, vec, nvalid);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Backward, scan warp: suffix sums of (a_t, b_t, c_t) over the tile and the
// look-back over the later tiles.  In: s_abc[0..2][f] = a_t, b_t, c_t.
// Out: s_abc[0][f] = P(t) - S_a(t), s_abc[1][f] = S_b(t).
// ---------------------------------------------------------------------------
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_bwd_scan_warp(const ClnBwdArgs<T, P>& args, int ticket,
                                                  acc_t<T> (*s_abc)[G::BT]) {
  using A = acc_t<T>;
  constexpr int BT = G::BT, FPL = G::FPL;
  const int lane = threadIdx.x & 31;
  const int b = ticket % args.B;
  const int jr = ticket / args.B;  // tiles counted from the end
  const int j = args.ntiles - 1 - jr;

  // Inclusive suffix sums within the tile: per lane backwards over its
  // frames, then a shuffle-down scan over the lane totals.
  A la[FPL], lb[FPL], lc[FPL];
  A sa = A(0), sb = A(0), sc = A(0);
#pragma unroll
  for (int i = FPL - 1; i >= 0; --i) {
    const int f = lane * FPL + i;
    if (f < BT) {
      sa += s_abc[0][f];
      sb += s_abc[1][f];
      sc += s_abc[2][f];
    }
    la[i] = sa;
    lb[i] = sb;
    lc[i] = sc;
  }
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const A oa = __shfl_down_sync(kFullMask, sa, o);
    const A ob = __shfl_down_sync(kFullMask, sb, o);
    const A oc = __shfl_down_sync(kFullMask, sc, o);
    if (lane + o < 32) {
      sa += oa;
      sb += ob;
      sc += oc;
    }
  }
  A ea = __shfl_down_sync(kFullMask, sa, 1);
  A eb = __shfl_down_sync(kFullMask, sb, 1);
  A ec = __shfl_down_sync(kFullMask, sc, 1);
  if (lane == 31) ea = eb = ec = A(0);
  const A agg_a = __shfl_sync(kFullMask, sa, 0);
  const A agg_b = __shfl_sync(kFullMask, sb, 0);
  const A agg_c = __shfl_sync(kFullMask, sc, 0);

  // ---- decoupled look-back over the later tiles of batch item b ----
  A Xa = A(0), Xb = A(0), Xc = A(0);
  if (jr > 0) {
    if (lane == 0) {
      slot_store(args.slots, ticket, 0, agg_a, agg_b, agg_c);
      flag_release(args.flags + ticket, kFlagAggregate);
    }
    int pj = jr - 1;
    while (true) {
      const int tj = pj - lane;
      int fl = kFlagInclusive;  // tj < 0: past the end of the sequence, 0
      A wa = A(0), wb = A(0), wc = A(0);
      if (tj >= 0) {
        const long long kk = static_cast<long long>(tj) * args.B + b;
        fl = flag_wait(args.flags + kk);
        slot_load(args.slots, kk, fl == kFlagInclusive ? 1 : 0, wa, wb, wc);
      }
      const unsigned incl = __ballot_sync(kFullMask, fl == kFlagInclusive);
      const int first = incl ? __ffs(incl) - 1 : 32;
      if (lane > first) wa = wb = wc = A(0);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        wa += __shfl_xor_sync(kFullMask, wa, o);
        wb += __shfl_xor_sync(kFullMask, wb, o);
        wc += __shfl_xor_sync(kFullMask, wc, o);
      }
      Xa += wa;
      Xb += wb;
      Xc += wc;
      if (incl) break;
      pj -= 32;
    }
  }
  if (lane == 0 && j > 0) {
    slot_store(args.slots, ticket, 1, Xa + agg_a, Xb + agg_b, Xc + agg_c);
    flag_release(args.flags + ticket, kFlagInclusive);
  }
#pragma unroll
  for (int i = 0; i < FPL; ++i) {
    const int f = lane * FPL + i;
    if (f < BT) {
      const A Sa = Xa + (ea + la[i]);
      const A Sb = Xb + (eb + lb[i]);
      const A Pp = Xc + (ec + lc[i]);
      s_abc[0][f] = Pp - Sa;
      s_abc[1][f] = Sb;
    }
  }
}

// ---------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------
template <typename T, typename P, int TPR, int R, bool KEEP_DY, int MB>
__global__ void __launch_bounds__(ClnGeom<T, TPR, R>::NTT, MB)
    cln_bwd_kernel(const ClnBwdArgs<T, P> args) {
  using A = acc_t<T>;
  using G = ClnGeom<T, TPR, R>;
  constexpr int NT = G::NT;
  constexpr int V = G::V, BT = G::BT;

  __shared__ int s_ticket;
  __shared__ A s_red[G::NW][2][BT];
  __shared__ A s_g[2][BT];  // per-frame G1, G2
  __shared__ A s_mu[BT], s_r[BT];
  __shared__ A s_abc[3][BT];  // a_t, b_t, b_t * (mu_t - K); then P - S_a, S_b

  const int tid = threadIdx.x;
  if (tid == 0) s_ticket = atomicAdd(args.ticket, 1);
  __syncthreads();
  const int ticket = s_ticket;

  if (tid >= NT) {  // the scan warp
    named_barrier(kBarAll, G::NTT);  // a_t, b_t, c_t ready
    cln_bwd_scan_warp<G>(args, ticket, s_abc);
    named_barrier(kBarAll, G::NTT);  // suffix sums ready
    return;
  }

  const int C = args.C, L = args.L;
  const int b = ticket % args.B;
  const int t0 = (args.ntiles - 1 - ticket / args.B) * BT;
  const int tr = tid / G::TPR, tc = tid % G::TPR;
  const int tt = t0 + tc * V;
  const int nvalid = L - tt;
  const bool vec = args.vec != 0 && nvalid >= V;
  const long long bofs = static_cast<long long>(b) * C * L;
  const T* xb = args.x + bofs;
  const T* dyb = args.dy + bofs;
  const A K = args.mean[static_cast<long long>(b) * L];

  if (tid < BT) {
    const int t = t0 + tid;
    const bool ok = t < L;
    s_mu[tid] = ok ? args.mean[static_cast<long long>(b) * L + t] : A(0);
    s_r[tid] = ok ? args.rstd[static_cast<long long>(b) * L + t] : A(0);
  }
  named_barrier(kBarData, NT);
  A mu[V], rs[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    mu[k] = s_mu[tc * V + k];
    rs[k] = s_r[tc * V + k];
  }

  // dy kept in registers (KEEP_DY): all R packs in flight at once.  Else dy
  // is prefetched into L1 for all R rows (no registers), read DB rows at a
  // time and re-read for dx (L1 hits when the tile is a single chunk).
  constexpr int DB = KEEP_DY ? R : 2;
  uint4 xk[R];
  uint4 gk[DB];
  A s[2][V];
#pragma unroll
  for (int k = 0; k < V; ++k) s[0][k] = s[1][k] = A(0);
  // Beyond the tile end and beyond C everything loads as 0, so dy = 0 there
  // and nothing needs masking: g, g * xhat, dy * xhat and dy all vanish.
  const bool once = args.nchunks == 1;
  for (int ch = 0; ch < args.nchunks; ++ch) {
    const int c0 = ch * G::CR;
    if (once)
      cln_load_chunk<G, Ld::kNoL1>(xk, xb, C, L, c0, tr, tt, vec, nvalid);
    else
      cln_load_chunk<G, Ld::kCg>(xk, xb, C, L, c0, tr, tt, vec, nvalid);
    if constexpr (!KEEP_DY) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int c = c0 + r * G::RPP + tr;
        if (c < C && nvalid > 0) prefetch_l1(dyb + static_cast<long long>(c) * L + tt);
      }
    }
#pragma unroll
    for (int rb = 0; rb < R; rb += DB) {
#pragma unroll
      for (int q = 0; q < DB; ++q) {
        if (rb + q >= R) break;  // compile-time after unrolling
        const int c = c0 + (rb + q) * G::RPP + tr;
        const T* p = dyb + static_cast<long long>(c) * L + tt;
        // dy that is re-read for dx stays in L1 when the tile is a single
        // chunk (x bypasses L1 to leave it the room), else in L2.
        if (!(c < C && nvalid > 0))
          gk[q] = make_uint4(0u, 0u, 0u, 0u);
        else if (KEEP_DY && once)
          gk[q] = load_pack<T, Ld::kNoL1>(p, vec, nvalid);
        else if (once)
          gk[q] = load_pack<T, Ld::kCa>(p, vec, nvalid);
        else
          gk[q] = load_pack<T, Ld::kCg>(p, vec, nvalid);
      }
#pragma unroll
      for (int q = 0; q < DB; ++q) {
        const int r = rb + q;
        if (r >= R) break;
        const int c = c0 + r * G::RPP + tr;
        const A gm = (args.gamma && c < C) ? load_param<P, A>(args.gamma, c) : A(1);
        A pg = A(0), pb = A(0);
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const A dyv = Elem<T>::get(gk[q], k);
          const A xh = (Elem<T>::get(xk[r], k) - mu[k]) * rs[k];
          const A g = dyv * gm;
          s[0][k] += g;
          s[1][k] += g * xh;
          pg += dyv * xh;
          pb += dyv;
        }
        if (args.partial) {
          // The 8 threads of a row hold its 8 packs: xor-reduce within them.
#pragma unroll
          for (int o = 1; o < G::TPR; o <<= 1) {
            pg += __shfl_xor_sync(kFullMask, pg, o);
            pb += __shfl_xor_sync(kFullMask, pb, o);
          }
          if (tc == 0 && c < C) {
            A* pp = args.partial + static_cast<long long>(ticket) * 2 * C;
            pp[c] = pg;
            pp[C + c] = pb;
          }
        }
      }
      if constexpr (!KEEP_DY) asm volatile("" ::: "memory");
    }
  }
  cln_frame_reduce<G, 2>(s, s_red, s_g);

  if (tid < BT) {
    const int t = t0 + tid;
    A a_ = A(0), b_ = A(0), c_ = A(0);
    if (t < L) {
      const long long cnt0 = args.count ? args.count[b] : 0LL;
      const A n = static_cast<A>(cnt0 + static_cast<long long>(C) * (t + 1));
      const A r = s_r[tid];
      a_ = r * s_g[0][tid] / n;
      b_ = r * r * s_g[1][tid] / n;
      c_ = b_ * (s_mu[tid] - K);
    }
    s_abc[0][tid] = a_;
    s_abc[1][tid] = b_;
    s_abc[2][tid] = c_;
  }
  named_barrier(kBarAll, G::NTT);  // a_t, b_t, c_t ready
  named_barrier(kBarAll, G::NTT);  // suffix sums ready

  // ---- dx = r * g - (x - K) * S_b + (P - S_a) ----
  A Sb[V], U[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    U[k] = s_abc[0][tc * V + k];
    Sb[k] = s_abc[1][tc * V + k];
  }
  T* dxb = args.dx + bofs;
  for (int ch = 0; ch < args.nchunks; ++ch) {
    const int c0 = ch * G::CR;
    if (!once) cln_load_chunk<G, Ld::kCg>(xk, xb, C, L, c0, tr, tt, vec, nvalid);
#pragma unroll
    for (int rb = 0; rb < R; rb += DB) {
      if constexpr (!KEEP_DY) {
#pragma unroll
        for (int q = 0; q < DB; ++q) {
          if (rb + q >= R) break;
          const int c = c0 + (rb + q) * G::RPP + tr;
          const T* p = dyb + static_cast<long long>(c) * L + tt;
          if (!(c < C && nvalid > 0))
            gk[q] = make_uint4(0u, 0u, 0u, 0u);
          else if (once)
            gk[q] = load_pack<T, Ld::kCa>(p, vec, nvalid);
          else
            gk[q] = load_pack<T, Ld::kCg>(p, vec, nvalid);
        }
      } else if (!once) {
        cln_load_chunk<G, Ld::kCg>(gk, dyb, C, L, c0, tr, tt, vec, nvalid);
      }
#pragma unroll
      for (int q = 0; q < DB; ++q) {
        const int r = rb + q;
        if (r >= R) break;
        const int c = c0 + r * G::RPP + tr;
        if (c < C && nvalid > 0) {
          const A gm = args.gamma ? load_param<P, A>(args.gamma, c) : A(1);
          A out[V];
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const A xv = Elem<T>::get(xk[r], k);
            out[k] = rs[k] * (Elem<T>::get(gk[q], k) * gm) - (xv - K) * Sb[k] + U[k];
          }
          store_pack<T>(dxb + static_cast<long long>(c) * L + tt, out, vec, nvalid);
        }
      }
      // Bound the registers: the next batch of dy loads is not hoisted above
      // this one (ptxas would otherwise keep all R packs of dy in flight).
      if constexpr (!KEEP_DY) asm volatile("" ::: "memory");
    }
  }
}

}  // namespace normk
