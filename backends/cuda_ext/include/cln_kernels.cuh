// Cumulative layer norm (cLN), forward and backward, as single-pass scans
// over time with a fixed-order cross-tile prefix (no inclusive prefixes, no
// look-back chains).  Framework-free (see norm_common.cuh).
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
//     scan and the cross-tile prefix.  Keeping that code off the data warps' path is
//     what lets 64-76 registers of tile data fit without spills: with the
//     scan inlined in warp 0 (an earlier version), ptxas needed 135
//     registers for fp32 with 16 packs per thread and 164 for fp64 (both
//     spilled under a 128 cap), because the tile stayed live across the
//     cross-tile wait.  Data warps and the scan warp meet
//     at named barriers (barrier.sync, non-.aligned: different code paths).
//     7 + 1 = 8 warps, not 8 + 1: the register file is split over the 4 SM
//     sub-partitions by warp, and 2 blocks of 9 warps put 5 warps on one of
//     them, capping every thread at 96 registers instead of 128.
//
// Forward per tile: exact per-frame mean and M2 over the channels (two
// passes over registers: the sum, then the squared deviations from the
// frame mean); data warp 0 reduces them to the tile aggregate and publishes
// it at once (slot + release flag; it never waits for anything first); the
// scan warp does an inclusive Chan-combine scan over the BT frames and
// combines it with the tile's exclusive prefix, then
// y = (x - mu_t) * rstd_t * gamma + beta.
//
// Cross-tile prefix, fixed order.  Tiles form groups of kGroup = 32; the
// last tile of a group also publishes the group aggregate (the 32 tile
// aggregates reduced with one fixed xor tree).  Tile j = 32g + p gets
//   X = state (+) [G_0 .. G_31] (+) [G_32 .. G_63] (+) ... (+) tree(tiles 32g .. j-1)
// where [..] is one chunk of 32 group aggregates (one per lane, fixed xor
// tree, out-of-range lanes the exact identity n = 0) and the chunks are
// folded left to right.  The streaming state (count, mean0, M2_0) is the
// leftmost element.  So tile j's result is a fixed, data-independent
// function of the aggregates of tiles < j: bitwise run-to-run deterministic
// whatever the timing, and bitwise causal (frames after t never reach
// frame t's output).  Nobody publishes after waiting on a prefix: a tile
// aggregate needs only its own tile, a group aggregate only its 32 tile
// aggregates, so there is no serial chain through the sequence.  Cost per
// tile: ceil(g / 32) + 1 chunks of 32 L2 reads (2 at 64000 fp32 frames),
// issued before the tile's first barrier (overlapping the data warps'
// loads), except for the last tile of a group, which must wait for its own
// aggregate to publish G_g first.
//
// Tiles get their ids from an atomic ticket counter (not blockIdx), so a
// block only ever waits on tiles whose blocks already started: no deadlock
// whatever the scheduler does.  Tickets are batch-fastest (b = k % B), so the
// first B tickets are the first tiles of every batch item, which need nobody.
//
// Backward is the same machine run as a suffix scan (tickets from the last
// tile backwards, groups of 32 tiles counted from the end, plain sums in
// the same fixed order) over (a_t, b_t, b_t * (mu_t - K)) with K = mean[b, 0], per
// DESIGN.md and common/eager.py:
//   dx = r * g - S_a - (x - K) * S_b + P.
// The backward keeps x in registers, and dy too where it fits (KEEP_DY);
// otherwise dy is prefetched into L1 and read again for dx.
// dgamma / dbeta: per-tile, per-channel partials written to a [tiles][2][C]
// buffer, reduced afterwards in a fixed order (reduce_kernels.cuh): no float
// atomics, bitwise reproducible.
//
// Determinism: y, mean, rstd, m2_last, dx, dgamma, dbeta are bitwise
// reproducible for a given shape and launch configuration (the emulator
// selftest checks it with randomized publication timing, and checks
// causality bitwise).
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
  int* flags;   // B * ntiles tile-aggregate flags, zeroed before launch
  int* gflags;  // B * ntiles group-aggregate flags (at a group's last tile), zeroed
  A* slots;     // B * ntiles * 8: [tile][0: tile aggregate, 1: group aggregate][4]
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
  int* gflags;
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
// Fixed-order publication and prefix (see the header comment).
//
// Every tile publishes its aggregate alone (slot 0, flags[tile]); the last
// tile of every group of kGroup = 32 tiles also publishes the group's
// aggregate (slot 1, gflags[tile]).  A chunk of 32 consecutive tiles or
// groups is reduced with one fixed xor tree (the lower lane is always the
// earlier partition, so both partners compute the same bits), lanes out of
// range holding the exact identity (count 0).
// ---------------------------------------------------------------------------
constexpr int kGroup = 32;

// Spin until the flag at p is set (acquire).  The publisher holds an earlier
// ticket (or is this very block's data warp 0), so the wait terminates.
__device__ __forceinline__ void wait_ready(const int* p) { (void)flag_wait(p); }

// Ordered Chan reduction of one (count, mean, M2) per lane; every lane ends
// with the total.  Lane l is partition l (lower = earlier).
template <typename A>
__device__ __forceinline__ void chan_tree(long long& n, A& m, A& M) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const long long on = __shfl_xor_sync(kFullMask, n, o);
    const A om = __shfl_xor_sync(kFullMask, m, o);
    const A oM = __shfl_xor_sync(kFullMask, M, o);
    if (lane & o)
      chan_combine_i(on, om, oM, n, m, M, n, m, M);
    else
      chan_combine_i(n, m, M, on, om, oM, n, m, M);
  }
}

// Butterfly sums: a + b == b + a bitwise, so every lane ends with the same bits.
template <typename A>
__device__ __forceinline__ void sum_tree(A& a, A& b, A& c) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    a += __shfl_xor_sync(kFullMask, a, o);
    b += __shfl_xor_sync(kFullMask, b, o);
    c += __shfl_xor_sync(kFullMask, c, o);
  }
}

// Forward: fold the group aggregates 0 .. ng-1 of batch item b, in chunks of
// 32 in order, onto (Xn, Xm, XM).  `gtile(k)` = ticket of group k's last tile.
template <typename A, typename F>
__device__ __forceinline__ void fwd_fold_groups(const int* gflags, const A* slots, int ng,
                                                long long group_n, F gtile, long long& Xn, A& Xm,
                                                A& XM) {
  const int lane = threadIdx.x & 31;
  for (int base = 0; base < ng; base += 32) {
    long long wn = 0;
    A wm = A(0), wM = A(0), unused;
    if (base + lane < ng) {
      const long long kk = gtile(base + lane);
      wait_ready(gflags + kk);
      slot_load(slots, kk, 1, wm, wM, unused);
      wn = group_n;
    }
    chan_tree(wn, wm, wM);
    chan_combine_i(Xn, Xm, XM, wn, wm, wM, Xn, Xm, XM);
  }
}

// Forward, data warp 0: the tile aggregate from the per-frame (mean, M2) in
// s_mu / s_m2 (fixed order: FPL frames per lane in sequence, then the tree),
// published for the later tiles.
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_fwd_publish(const ClnFwdArgs<T, P>& args, int ticket, int t0,
                                                const acc_t<T>* s_mu, const acc_t<T>* s_m2) {
  using A = acc_t<T>;
  const int lane = threadIdx.x & 31;
  long long n = 0;
  A m = A(0), M = A(0);
#pragma unroll
  for (int i = 0; i < G::FPL; ++i) {
    const int f = lane * G::FPL + i;
    if (f < G::BT && t0 + f < args.L)
      chan_combine_i(n, m, M, static_cast<long long>(args.C), s_mu[f], s_m2[f], n, m, M);
  }
  chan_tree(n, m, M);
  if (lane == 0) {
    slot_store(args.slots, ticket, 0, m, M, A(0));
    flag_release(args.flags + ticket, kFlagReady);
  }
}

// ---------------------------------------------------------------------------
// Forward, scan warp: frame scan + fixed-order exclusive prefix.  In: s_mu /
// s_m2 hold each frame's (mean, M2) over the C channels.  Out: s_omu / s_ors
// hold mu_t and rstd_t; mean / rstd / m2_last are written.
//
// Tile j (group g = j / 32, position p = j % 32) of batch item b:
//   X = state (+) G_0 (+) ... (+) G_{g-1} (+) tree(tiles 32g .. j-1)
// with the chunks folded left to right.  The waits before the first
// barrier overlap the data warps' loads; the last tile of a group first
// publishes G_g (which needs its own aggregate, so after the barrier) and
// only then folds the earlier groups, so no publication ever waits on a
// prefix: there are no chains.
// ---------------------------------------------------------------------------
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_fwd_scan_warp(const ClnFwdArgs<T, P>& args, int ticket,
                                                  const acc_t<T>* s_mu, const acc_t<T>* s_m2,
                                                  acc_t<T>* s_omu, acc_t<T>* s_ors) {
  using A = acc_t<T>;
  constexpr int BT = G::BT, FPL = G::FPL;
  const int lane = threadIdx.x & 31;
  const int C = args.C, L = args.L, B = args.B;
  const int b = ticket % B;
  const int j = ticket / B;
  const int t0 = j * BT;
  const int g = j / kGroup, pos = j % kGroup;
  const bool gend = pos == kGroup - 1;
  const long long tile_n = static_cast<long long>(C) * BT;  // a full predecessor tile
  auto gtile = [&](int k) { return (static_cast<long long>(k) * kGroup + kGroup - 1) * B + b; };

  const long long cnt0 = args.count0 ? args.count0[b] : 0LL;
  long long Xn = cnt0;  // the exclusive prefix
  A Xm = (args.mean0 && cnt0 > 0) ? args.mean0[b] : A(0);
  A XM = (args.m20 && cnt0 > 0) ? args.m20[b] : A(0);
  // This lane's tile of the group: 32g + lane (identity where not earlier).
  const long long kk = (static_cast<long long>(g) * kGroup + lane) * B + b;
  if (!gend) {
    fwd_fold_groups(args.gflags, args.slots, g, tile_n * kGroup, gtile, Xn, Xm, XM);
    long long wn = 0;
    A wm = A(0), wM = A(0);
    if (lane < pos) {
      wait_ready(args.flags + kk);
      A unused;
      slot_load(args.slots, kk, 0, wm, wM, unused);
      wn = tile_n;
    }
    chan_tree(wn, wm, wM);
    chan_combine_i(Xn, Xm, XM, wn, wm, wM, Xn, Xm, XM);
  }

  named_barrier(kBarAll, G::NTT);  // frame statistics ready

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
  // This lane's exclusive prefix within the tile.
  A en = __shfl_up_sync(kFullMask, n, 1);
  A em = __shfl_up_sync(kFullMask, m, 1);
  A eM = __shfl_up_sync(kFullMask, M, 1);
  if (lane == 0) en = em = eM = A(0);

  if (gend) {
    // All 32 tiles of the group (this one published by data warp 0): the
    // group aggregate first, then the same prefix as above.
    A wm, wM, unused;
    wait_ready(args.flags + kk);
    slot_load(args.slots, kk, 0, wm, wM, unused);
    long long wn = tile_n;
    {
      long long gn = wn;
      A gm = wm, gM = wM;
      chan_tree(gn, gm, gM);
      if (lane == 0 && j + 1 < args.ntiles) {
        slot_store(args.slots, ticket, 1, gm, gM, A(0));
        flag_release(args.gflags + ticket, kFlagReady);
      }
    }
    fwd_fold_groups(args.gflags, args.slots, g, tile_n * kGroup, gtile, Xn, Xm, XM);
    if (lane == kGroup - 1) {
      wn = 0;
      wm = wM = A(0);
    }
    chan_tree(wn, wm, wM);
    chan_combine_i(Xn, Xm, XM, wn, wm, wM, Xn, Xm, XM);
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
      s_omu[f] = fm;
      s_ors[f] = r;
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
  __shared__ A s_m2[BT];  // frame M2
  __shared__ A s_omu[BT], s_ors[BT];  // mu_t, rstd_t (from the scan warp)

  const int tid = threadIdx.x;
  if (tid == 0) s_ticket = atomicAdd(args.ticket, 1);
  __syncthreads();
  const int ticket = s_ticket;

  if (tid >= NT) {  // the scan warp
    cln_fwd_scan_warp<G>(args, ticket, s_mu, s_m2, s_omu, s_ors);  // has the first barrier
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
  // The tile aggregate, for the later tiles: published by data warp 0 at
  // once, never after a wait.
  if (tid < 32 && ticket / args.B + 1 < args.ntiles) cln_fwd_publish<G>(args, ticket, t0, s_mu, s_m2);
  named_barrier(kBarAll, G::NTT);  // mu_t / rstd_t ready

  // ---- y = (x - mu_t) * rstd_t * gamma + beta ----
  A mu[V], rs[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const bool ok = tt + k < L;
    mu[k] = ok ? s_omu[tc * V + k] : A(0);
    rs[k] = ok ? s_ors[tc * V + k] : A(0);
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
// Backward, data warp 0: the tile's sums of (a_t, b_t, c_t), fixed order,
// published for the earlier tiles.
// ---------------------------------------------------------------------------
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_bwd_publish(const ClnBwdArgs<T, P>& args, int ticket,
                                                const acc_t<T> (*s_abc)[G::BT]) {
  using A = acc_t<T>;
  const int lane = threadIdx.x & 31;
  A sa = A(0), sb = A(0), sc = A(0);
#pragma unroll
  for (int i = 0; i < G::FPL; ++i) {
    const int f = lane * G::FPL + i;
    if (f < G::BT) {  // frames past L hold 0
      sa += s_abc[0][f];
      sb += s_abc[1][f];
      sc += s_abc[2][f];
    }
  }
  sum_tree(sa, sb, sc);
  if (lane == 0) {
    slot_store(args.slots, ticket, 0, sa, sb, sc);
    flag_release(args.flags + ticket, kFlagReady);
  }
}

// Backward: sum the group aggregates 0 .. ng-1 (groups counted from the end
// of the sequence) in chunks of 32, in order, onto X.
template <typename A, typename F>
__device__ __forceinline__ void bwd_fold_groups(const int* gflags, const A* slots, int ng, F gtile,
                                                A& Xa, A& Xb, A& Xc) {
  const int lane = threadIdx.x & 31;
  for (int base = 0; base < ng; base += 32) {
    A wa = A(0), wb = A(0), wc = A(0);
    if (base + lane < ng) {
      const long long kk = gtile(base + lane);
      wait_ready(gflags + kk);
      slot_load(slots, kk, 1, wa, wb, wc);
    }
    sum_tree(wa, wb, wc);
    Xa += wa;
    Xb += wb;
    Xc += wc;
  }
}

// ---------------------------------------------------------------------------
// Backward, scan warp: suffix sums of (a_t, b_t, c_t) over the tile and the
// fixed-order sum over the later tiles (the forward's scheme mirrored: tile
// jr counted from the end, groups of 32 such tiles).  In: s_abc[0..2][f] =
// a_t, b_t, c_t.  Out: s_out[0][f] = P(t) - S_a(t), s_out[1][f] = S_b(t).
// ---------------------------------------------------------------------------
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_bwd_scan_warp(const ClnBwdArgs<T, P>& args, int ticket,
                                                  const acc_t<T> (*s_abc)[G::BT],
                                                  acc_t<T> (*s_out)[G::BT]) {
  using A = acc_t<T>;
  constexpr int BT = G::BT, FPL = G::FPL;
  const int lane = threadIdx.x & 31;
  const int B = args.B;
  const int b = ticket % B;
  const int jr = ticket / B;  // tiles counted from the end
  const int g = jr / kGroup, pos = jr % kGroup;
  const bool gend = pos == kGroup - 1;
  auto gtile = [&](int k) { return (static_cast<long long>(k) * kGroup + kGroup - 1) * B + b; };

  A Xa = A(0), Xb = A(0), Xc = A(0);  // the sums over all later tiles
  const long long kk = (static_cast<long long>(g) * kGroup + lane) * B + b;
  if (!gend) {
    bwd_fold_groups(args.gflags, args.slots, g, gtile, Xa, Xb, Xc);
    A wa = A(0), wb = A(0), wc = A(0);  // this lane's tile of the group
    if (lane < pos) {
      wait_ready(args.flags + kk);
      slot_load(args.slots, kk, 0, wa, wb, wc);
    }
    sum_tree(wa, wb, wc);
    Xa += wa;
    Xb += wb;
    Xc += wc;
  }

  named_barrier(kBarAll, G::NTT);  // a_t, b_t, c_t ready

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

  if (gend) {
    A wa, wb, wc;
    wait_ready(args.flags + kk);  // all 32 tiles, this one from data warp 0
    slot_load(args.slots, kk, 0, wa, wb, wc);
    {
      A ga = wa, gb = wb, gc = wc;
      sum_tree(ga, gb, gc);
      if (lane == 0 && jr + 1 < args.ntiles) {
        slot_store(args.slots, ticket, 1, ga, gb, gc);
        flag_release(args.gflags + ticket, kFlagReady);
      }
    }
    bwd_fold_groups(args.gflags, args.slots, g, gtile, Xa, Xb, Xc);
    if (lane == kGroup - 1) wa = wb = wc = A(0);
    sum_tree(wa, wb, wc);
    Xa += wa;
    Xb += wb;
    Xc += wc;
  }

#pragma unroll
  for (int i = 0; i < FPL; ++i) {
    const int f = lane * FPL + i;
    if (f < BT) {
      const A Sa = Xa + (ea + la[i]);
      const A Sb = Xb + (eb + lb[i]);
      const A Pp = Xc + (ec + lc[i]);
      s_out[0][f] = Pp - Sa;
      s_out[1][f] = Sb;
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
  __shared__ A s_abc[3][BT];  // a_t, b_t, b_t * (mu_t - K)
  __shared__ A s_out[2][BT];  // P - S_a, S_b (from the scan warp)

  const int tid = threadIdx.x;
  if (tid == 0) s_ticket = atomicAdd(args.ticket, 1);
  __syncthreads();
  const int ticket = s_ticket;

  if (tid >= NT) {  // the scan warp
    cln_bwd_scan_warp<G>(args, ticket, s_abc, s_out);  // has the first barrier
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
  if (tid < 32 && ticket / args.B + 1 < args.ntiles) cln_bwd_publish<G>(args, ticket, s_abc);
  named_barrier(kBarAll, G::NTT);  // suffix sums ready

  // ---- dx = r * g - (x - K) * S_b + (P - S_a) ----
  A Sb[V], U[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    U[k] = s_out[0][tc * V + k];
    Sb[k] = s_out[1][tc * V + k];
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
