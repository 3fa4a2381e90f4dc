// Cumulative layer norm (cLN), forward and backward, as single-kernel scans
// over time: one block per tile, tickets, and a fixed-order two-level
// direct prefix across the tiles.
// Framework-free (see norm_common.cuh).
//
// These register-tile kernels are the fallback: calls go to the streaming
// kernels of cln_stream.cuh (faster on every target shape) unless their
// shared-memory ring does not fit (csrc/cln_common.h, stream_plan) or
// CLN_STREAM_PPR = -1 selects these.  The prefix machinery and the scan-warp
// halves below serve both families.
//
// x is (B, C, L) contiguous: time is the unit-stride dimension.  A block
// works on one tile of BT frames x all C channels of one batch item:
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
//     C <= CR the tile is read exactly once per block and y is written from
//     registers; for larger C the kernel loops over channel chunks and the
//     output pass re-reads the tile (from L2: it was read microseconds ago).
//   * One more warp, the scan warp, holds no tile data.  It does the frame
//     scan and the cross-tile prefix.  Keeping that code off the data warps'
//     path is what lets 64-76 registers of tile data fit without spills: with
//     the scan inlined in warp 0 (an earlier version), ptxas needed 135
//     registers for fp32 with 16 packs per thread and 164 for fp64 (both
//     spilled under a 128 cap), because the tile stayed live across the
//     cross-tile wait.  Data warps and the scan warp meet at named barriers
//     (barrier.sync, non-.aligned: different code paths).  7 + 1 = 8 warps,
//     not 8 + 1: the register file is split over the 4 SM sub-partitions by
//     warp, and 2 blocks of 9 warps put 5 warps on one of them, capping
//     every thread at 96 registers instead of 128.
//
// Cross-tile prefix: why not a decoupled look-back.  The previous version
// (Merrill & Garland look-back: publish the aggregate, walk back over the
// predecessors' aggregate / inclusive words until an inclusive one) reached
// only 0.31-0.49 of copy bandwidth forward on an H200: the walk is a chain of
// dependent L2 round trips per tile, and each tile's inclusive word waits for
// its predecessor's, so the latency chain runs through every tile of a
// sequence.  Its result also depended on timing (which words the walk found
// inclusive), so y differed between runs in the last bits.  A Triton kernel
// with a direct fixed-order prefix (every tile reduces its predecessors'
// aggregates itself, no inclusive words) reached 0.59-0.67.  This kernel
// does the same direct prefix:
//
// Tiles: ntot = B * ntiles, global index g = i * B + b (b fastest; i is the
// tile index in time; the backward counts i from the last tile).  One block
// per tile; block k takes ticket k (an atomic counter, not blockIdx, so a
// block only waits on blocks that already started: no deadlock whatever the
// scheduler does) and works on tile g = k.  Each block:
//   1. loads the tile, computes the per-frame statistics and (scan warp) the
//      in-tile scan;
//   2. publishes the tile aggregate (forward: (mean, M2) of the tile's
//      C * BT values, the count being implied; backward: the sums of a_t,
//      b_t, b_t (mu_t - K) over the tile's frames) with a ready flag, before
//      it waits on anything, so no wait chain runs through the tiles; the
//      backward also writes its tile's dgamma / dbeta partials;
//   3. (scan warp) reduces the EXCLUSIVE prefix E_i of tile i from the
//      published words of earlier tiles, publishing E_i when i is a group
//      start (below);
//   4. mean / rstd (dx: the suffix sums) and y (dx), from the tile still in
//      registers (C <= CR) or re-read from L2 (chunked).
//
// Split roles were measured and removed: a STATS block (steps 1-2) and a
// NORMALIZE block (steps 1, 3, 4, re-reading the tile from L2) per tile,
// 2 * ntot tickets with an L2 window of D tiles, .cs hints on last use.  On
// the H200 it was slower everywhere (fraction of copy bandwidth, split vs
// this): (16, 512, 4000) fp32 fwd 0.43-0.45 vs 0.50, fwd+bwd 0.35 vs 0.43,
// bf16 fwd 0.25 vs 0.32; (4, 256, 16000) fp32 fwd 0.38 vs 0.39, bf16 0.23 vs
// 0.29; (2, 128, 64000) fp32 fwd 0.25 vs 0.27; seed (80, 64, 301) 21.8 vs
// 20.9 us.  The second read of every tile cost more than the prefix wait it
// hid.
//
// The prefix (cln_exclusive_prefix): the scan warp reads 32 published words
// per round at positions lo + c0 + lane, kPrefixU = 4 rounds in flight at
// once (relaxed flag loads, spin until all are set, one fence.acq_rel, then
// the payloads); each lane folds its words in order (Chan combine), then one
// fixed shuffle tree combines the 32 lanes (lanes with no words are exact
// identities, n = 0).  The order depends only on i and G, so the result
// depends only on i, G and the data of earlier tiles: bitwise deterministic
// run to run and bitwise causal, whatever the timing.  To bound the work (a
// direct prefix is O(i) words, O(ntiles^2) in all) tiles form groups of G
// (runtime; CLN_GROUP_TILES, 256 by default): the block of a group start
// i = sG computes E_sG = E_(s-1)G (+) reduce(agg[(s-1)G .. sG-1]) from the
// group prefix its predecessor group start published, and publishes E_sG;
// any other tile computes E_i = E_sG (+) reduce(agg[sG .. i-1]) (the base
// is combined last: its flag is polled after the group's words).  At most G
// words per tile, a chain of ntiles / G links; a group start has a smaller
// ticket than every other block of its group, so waits still only go to
// earlier tickets.  The streaming state (count, mean0, M2_0) is E_0.
// G = 256 rather than 1024 (at most 256 words per tile instead of 1024, for
// a group chain 4x as long): faster for long sequences on the H200,
// (2, 128, 64000) fp32 fwd 0.31 vs 0.27 of copy bandwidth, fwd+bwd 0.30 vs
// 0.26, bf16 fwd 0.23 vs 0.19, fwd+bwd 0.24 vs 0.21; neutral elsewhere.
//
// Memory layout (workspace, csrc/cln_common.h): per sequence b, the tile
// aggregates flags[b][i] / slots[b][i][kSlotW] (i counted in scan order, so
// a round of 32 words is one 128-byte line of flags) and the group prefixes
// gflags[b][s] / gslots[b][s][kSlotW].  Publication: one lane stores the
// payload (st.relaxed.gpu), then the flag with st.release.gpu; the payload
// is computed by the scan warp itself from shared memory after the named
// barrier, so every data thread's contribution is ordered before it.
// Readers: ld.relaxed.gpu flags, then fence.acq_rel.gpu, then the payloads.
// With float accumulators (fp32, fp16, bf16 inputs) a slot instead holds
// W {value, ready flag} pairs, each stored and loaded as one 64-bit access
// (norm_common.cuh, st_pair): a reader loads all of a word's pairs at once
// and needs every flag set, one L2 round trip per word instead of two and
// no fence; the flag arrays go unused.  The reader only ever uses the
// payload it loaded, so relaxed order is enough.  H200, forward (fraction
// of copy bandwidth, bench/results/nvidia-h200-s7e-tune-cln-defaults.log vs
// -s7c-tune-cln.log):
// (16, 512, 4000) fp32 0.64 -> 0.73, bf16 0.50 -> 0.56; (2, 128, 64000) fp32
// 0.52 -> 0.61; (1, 64, 2e6) fp32 0.49 -> 0.70.  No float atomics.
//
// Forward per tile: exact per-frame mean and M2 over the channels (two
// passes over registers: the sum, then the squared deviations from the
// frame mean), an inclusive Chan-combine scan over the BT frames (scan
// warp, shuffles), E_i (+) that, then y = (x - mu_t) * rstd_t * gamma + beta.
//
// Backward is the same machine run as a suffix scan (tiles counted from the
// last one) over (a_t, b_t, b_t * (mu_t - K)) with K = mean[b, 0], per
// DESIGN.md and common/eager.py:
//   dx = r * g - S_a - (x - K) * S_b + P.
// The backward keeps x in registers, and dy too where it fits (KEEP_DY);
// otherwise dy is prefetched into L1 and read again for dx.
// dgamma / dbeta: per-tile, per-channel partials to a [tiles][2][C] buffer,
// reduced afterwards in a fixed order (reduce_kernels.cuh): no float
// atomics, bitwise reproducible.
#pragma once

#include <type_traits>

#include "norm_common.cuh"
#include "tma.cuh"

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


// Words of A allocated per published slot (tile aggregate or group prefix):
// the forward's payload is 2 words, the backward's 3; with float
// accumulators each travels as a {value, flag} pair (kPairs), 4 and 6 words,
// the backward's padded to 8 (Op::kStride) for 16-byte vector loads.
constexpr int kSlotW = 8;
// Rounds of 32 published words whose loads are in flight at once: one L2
// round trip for the flags and one for the payloads per 128 words, instead
// of per 32.
constexpr int kPrefixU = 4;
// Default tiles per prefix group (launcher knob; see the top comment).
constexpr int kClnGroupDefault = 256;

// float32 forward: each frame's channel sum taken about a shift K (the frame's value in the
// tile's first channel row: K + sum(x - K) / C) in the frames within a call's first C, where
// args.shift is set (the streaming kernels, cln_stream.cuh, and the resident one,
// cln_resident.cuh).  A float32 sum of C values at a DC offset of D standard deviations loses
// D * 6e-8 * sqrt(C) and more (up to D * 6e-8 * C in one thread's running sum, as the resident
// kernel's); a frame's cumulative mean averages the sums of all the frames before it, so only
// frames with less than about C frames of history carry it (Triton's CLN_FWD_SHIFT;
// bench/probe_dc_first_frames.py).  The other tiles run the plain sums.  The register-tile
// kernels (below) sum a few rows per thread, then a tree, and Chan-merge chunks of CR
// channels: within the tolerance unshifted (CPU emulator, (4, 4096, 1) at offset 1000: 4.6e-5
// against 1.35e-4), and shifting them spilled registers (8-52 B in three fp32
// configurations, ptxas sm_90).  16-bit inputs round far above that error, float64 sums far
// below: float32 only.
template <typename T>
constexpr bool kShiftFrameSums = std::is_same<T, float>::value;

// Whether tile `tile` (ticket order: batch items interleaved) of a forward takes the shift.
template <typename T, typename Args>
__device__ __forceinline__ bool shift_tile(const Args& args, int tile, int bt) {
  return kShiftFrameSums<T> && args.shift != 0 && (tile / args.B) * bt < args.C;
}

template <typename T, typename P>
struct ClnFwdArgs {
  using A = acc_t<T>;
  const T* x;
  const P* gamma;  // nullable
  const P* beta;   // nullable
  T* y;
  A* mean;       // (B, L), nullable together with rstd (no backward follows)
  A* rstd;       // (B, L)
  A* m2_last;    // (B,)
  A* mean_last;  // (B,), nullable
  const long long* count0;  // (B,) nullable: values before this chunk
  const A* mean0;            // (B,) nullable
  const A* m20;              // (B,) nullable
  int B, C, L;
  int ntiles;   // tiles per batch item = ceil(L / BT)
  int nchunks;  // ceil(C / CR)
  int vec;      // 16-byte loads legal: L % V == 0 and x / y 16-byte aligned
  A eps;
  int group;    // G >= 1: tiles per prefix group
  int ngroups;  // ceil(ntiles / G)
  int* ticket;  // zeroed before launch
  int* flags;   // [B][ntiles] aggregate ready flags, zeroed before launch
  A* slots;     // [B][ntiles][kSlotW] aggregates
  int* gflags;  // [B][ngroups] group prefix ready flags, zeroed before launch
  A* gslots;    // [B][ngroups][kSlotW] group prefixes E_sG
  int nstages, lead;  // streaming kernels (cln_stream.cuh): ring depth S, producer lead D
                      // (0: the output warps refill the stages where the TMA copies, else D = 1)
  int diag;           // streaming forward: stages left out for timing (wrong outputs if > 0)
  int spin;           // the prefix waits' polls (round_spin; the call's prefix_spin)
  // Streaming kernels, TMA path (tma != 0): boxes of cbox channel rows x BT
  // frames of x and y, tensor maps over (T, C, B).
  int tma, cbox;
  CUtensorMap tm_x, tm_y;
  int shift;  // the frame sums of the first C frames about a shift (kShiftFrameSums)
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
  A* partial;  // sum dy * xhat, sum dy: per tile, (B * ntiles, 2, C), in the register-tile
              // kernels; per block, (gridDim.x, 2, C), in the streaming one; nullable
  int B, C, L;
  int ntiles;
  int nchunks;
  int vec;
  int group, ngroups;  // as in ClnFwdArgs
  int* ticket;
  int* flags;
  A* slots;
  int* gflags;
  A* gslots;
  int nstages, lead;  // as in ClnFwdArgs
  int spin;           // as in ClnFwdArgs
  // As in ClnFwdArgs; mean and rstd as (T, B) maps with boxes of BT x 1.
  int tma, cbox;
  CUtensorMap tm_x, tm_dy, tm_dx, tm_mean, tm_rstd;
};

// ---------------------------------------------------------------------------
// The two prefix monoids.  V: an accumulated prefix; Wd: one published word.
// Forward: V = (count, mean, M2) under the Chan combine with exact 64-bit
// counts (they pass 2^24); a word holds (mean, M2), its count implied (C * BT
// for a tile aggregate, count0 + C * BT * i for a group prefix E_i).  An
// empty V (n = 0) is an exact identity of chan_combine_i.  Backward: three
// plain sums.  combine(a, b): a is the earlier partition.
// ---------------------------------------------------------------------------
template <typename A>
struct FwdAgg {
  long long n;
  A m, M;
};
template <typename A>
struct FwdWord {
  A m, M;
};
template <typename A>
struct ClnFwdOp {
  using V = FwdAgg<A>;
  using Wd = FwdWord<A>;
  static constexpr int W = 2;
  __device__ __forceinline__ static V identity() { return V{0, A(0), A(0)}; }
  __device__ __forceinline__ static V combine(const V& a, const V& b) {
    V r;
    chan_combine_i(a.n, a.m, a.M, b.n, b.m, b.M, r.n, r.m, r.M);
    return r;
  }
  __device__ __forceinline__ static V lift(const Wd& w, long long n) { return V{n, w.m, w.M}; }
  __device__ __forceinline__ static V shfl_down(const V& v, int o) {
    return V{__shfl_down_sync(kFullMask, v.n, o), __shfl_down_sync(kFullMask, v.m, o),
             __shfl_down_sync(kFullMask, v.M, o)};
  }
  __device__ __forceinline__ static V shfl(const V& v, int src) {
    return V{__shfl_sync(kFullMask, v.n, src), __shfl_sync(kFullMask, v.m, src),
             __shfl_sync(kFullMask, v.M, src)};
  }
  __device__ __forceinline__ static Wd load(const A* s) { return Wd{ld_relaxed(s), ld_relaxed(s + 1)}; }
  __device__ __forceinline__ static void store(A* s, const V& v) {
    st_relaxed(s, v.m);
    st_relaxed(s + 1, v.M);
  }
  // As W published pairs (kPairs<A>).
  __device__ __forceinline__ static Wd from_pairs(const unsigned long long (&w)[W]) {
    return Wd{pair_value(w[0]), pair_value(w[1])};
  }
  static constexpr int kStride = 4;  // words of A per published slot as pairs (16 bytes)
  __device__ __forceinline__ static void store_pairs(A* s, const V& v) { st_pair2(s, v.m, v.M); }
};

template <typename A>
struct BwdAgg {
  A a, b, c;
};
template <typename A>
struct ClnBwdOp {
  using V = BwdAgg<A>;
  using Wd = BwdAgg<A>;
  static constexpr int W = 3;
  __device__ __forceinline__ static V identity() { return V{A(0), A(0), A(0)}; }
  __device__ __forceinline__ static V combine(const V& x, const V& y) {
    return V{x.a + y.a, x.b + y.b, x.c + y.c};
  }
  __device__ __forceinline__ static V lift(const Wd& w, long long) { return w; }
  __device__ __forceinline__ static V shfl_down(const V& v, int o) {
    return V{__shfl_down_sync(kFullMask, v.a, o), __shfl_down_sync(kFullMask, v.b, o),
             __shfl_down_sync(kFullMask, v.c, o)};
  }
  __device__ __forceinline__ static V shfl(const V& v, int src) {
    return V{__shfl_sync(kFullMask, v.a, src), __shfl_sync(kFullMask, v.b, src),
             __shfl_sync(kFullMask, v.c, src)};
  }
  __device__ __forceinline__ static Wd load(const A* s) {
    return Wd{ld_relaxed(s), ld_relaxed(s + 1), ld_relaxed(s + 2)};
  }
  __device__ __forceinline__ static void store(A* s, const V& v) {
    st_relaxed(s, v.a);
    st_relaxed(s + 1, v.b);
    st_relaxed(s + 2, v.c);
  }
  __device__ __forceinline__ static Wd from_pairs(const unsigned long long (&w)[W]) {
    return Wd{pair_value(w[0]), pair_value(w[1]), pair_value(w[2])};
  }
  static constexpr int kStride = 8;  // 24 bytes of pairs, padded to 32 (16-byte aligned)
  __device__ __forceinline__ static void store_pairs(A* s, const V& v) {
    st_pair2(s, v.a, v.b);
    st_pair(s + 4, v.c);
  }
};

// The W pairs of one published word (kPairs): a 16-byte load per two pairs.
template <int W>
__device__ __forceinline__ void ld_word_pairs(const float* p, unsigned long long (&w)[W]) {
  static_assert(W == 2 || W == 3, "a word is 2 or 3 pairs");
  ld_pair2(p, w[0], w[1]);
  if constexpr (W == 3) w[2] = ld_pair(p + 4);
}
template <int W>
__device__ __forceinline__ bool word_ready(const unsigned long long (&w)[W]) {
  bool r = true;
#pragma unroll
  for (int k = 0; k < W; ++k) r = r && pair_ready(w[k]);
  return r;
}
// Reload the word at p until every pair's flag is set (the pairs' flag_spin:
// only ever called on words of blocks with an earlier ticket or tile); a
// 20-ns sleep between polls unless `spin` (ClnFwdArgs::spin); spin < 0: no
// wait (the negative control of tests/test_cuda_ext_paths.py's spin test:
// wrong outputs).
template <int W>
__device__ __forceinline__ void word_spin(const float* p, unsigned long long (&w)[W], int spin) {
  if (spin < 0) return;
  while (!word_ready(w)) {
    if (spin == 0) __nanosleep(20);
    ld_word_pairs(p, w);
  }
}
// The U words of one lane's round (word u at slots + (c0 + 32 u) * S):
// spin = 0: each word in turn until it is ready, 20 ns between polls (as
// word_spin), so a lane whose words all land late pays up to U round trips
// after the last one; spin = 1: every not-ready word reloaded together, no
// sleep, until all are ready (one round trip after the last one); spin < 0:
// no wait (word_spin).  Out-of-range words hold ~0 (ready).  One loop for
// both polls: two loops (a word_spin per word, then the joint one) made
// ptxas spill 8 bytes in the fp16 register-tile forward (MB = 4).
template <int S, int U, int W>
__device__ __forceinline__ void round_spin(const float* slots, int c0,
                                           unsigned long long (&w)[U][W], int spin) {
  static_assert(U <= 32, "one bit per word");
  if (spin < 0) return;
  for (;;) {
    unsigned pending = 0;
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (!word_ready(w[u])) pending |= 1u << u;
    if (pending == 0) return;
    if (spin == 0) {
      __nanosleep(20);
      pending &= 0u - pending;  // the first word not ready only
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (pending >> u & 1u) ld_word_pairs(slots + static_cast<long long>(c0 + 32 * u) * S, w[u]);
  }
}

// Reduce the published words [lo, hi) of one sequence in a fixed order (a
// function of lo and hi only): lane l folds words lo + l, lo + l + 32,
// lo + l + 64, ... in that order, kPrefixU of them in flight at once; then
// one fixed shuffle tree over the 32 lane results (lane l takes lane l + o
// at level o; a lane with no words holds an exact identity).  One combine
// per word plus one tree, instead of a tree per 32 words: a tree per round
// (5 dependent shuffle + Chan steps) cost both the latency and, unrolled
// over the rounds in flight, more registers than the 64 the small
// configurations allow (ptxas spilled).  wn: the implied count of one word.
// Whole warp; every lane gets the result.
template <typename Op, typename A>
__device__ __forceinline__ typename Op::V cln_reduce_published(const int* flags, const A* slots,
                                                               int lo, int hi, long long wn,
                                                               int spin) {
  using V = typename Op::V;
  using Wd = typename Op::Wd;
  constexpr int U = kPrefixU;
  const int lane = threadIdx.x & 31;
  V acc = Op::identity();
  if constexpr (kPairs<A>) {  // payload and flags in one round trip (norm_common.cuh, st_pair)
    constexpr int W = Op::W;
    for (int c0 = lo + lane; c0 - lane < hi; c0 += 32 * U) {
      unsigned long long w[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (c0 + 32 * u < hi) {
          ld_word_pairs(slots + static_cast<long long>(c0 + 32 * u) * Op::kStride, w[u]);
        } else {
#pragma unroll
          for (int k = 0; k < W; ++k) w[u][k] = ~0ull;
        }
      }
      round_spin<Op::kStride>(slots, c0, w, spin);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (c0 + 32 * u < hi) acc = Op::combine(acc, Op::lift(Op::from_pairs(w[u]), wn));
    }
  } else {
    for (int c0 = lo + lane; c0 - lane < hi; c0 += 32 * U) {  // warp-uniform trip count
      int fl[U];
#pragma unroll
      for (int u = 0; u < U; ++u) fl[u] = c0 + 32 * u < hi ? flag_relaxed(flags + c0 + 32 * u) : 1;
#pragma unroll
      for (int u = 0; u < U; ++u) flag_spin(flags + c0 + 32 * u, fl[u]);
      fence_acquire();
      Wd w[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (c0 + 32 * u < hi) w[u] = Op::load(slots + static_cast<long long>(c0 + 32 * u) * Op::W);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (c0 + 32 * u < hi) acc = Op::combine(acc, Op::lift(w[u], wn));
    }
  }
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const V other = Op::shfl_down(acc, o);
    if (lane + o < 32) acc = Op::combine(acc, other);
  }
  return Op::shfl(acc, 0);
}

// Publish word i (a tile aggregate or a group prefix; one lane).
template <typename Op, typename A>
__device__ __forceinline__ void cln_publish(int* flags, A* slots, int i, const typename Op::V& v) {
  if constexpr (kPairs<A>) {
    Op::store_pairs(slots + static_cast<long long>(i) * Op::kStride, v);
  } else {
    Op::store(slots + static_cast<long long>(i) * Op::W, v);
    flag_release(flags + i, 1);
  }
}

// The exclusive prefix E_i of tile i of one sequence (flags / slots / gflags
// / gslots point at that sequence), grouped by G (top comment).  state = E_0
// (its count n0).  A group start publishes E_i.  Whole warp.
template <typename Op, typename A>
__device__ __forceinline__ typename Op::V cln_exclusive_prefix(int i, int G, const int* flags,
                                                               const A* slots, int* gflags,
                                                               A* gslots,
                                                               const typename Op::V& state,
                                                               long long n0, long long tile_n,
                                                               int spin) {
  using V = typename Op::V;
  if (i == 0) return state;
  const int s = i / G;
  const bool start = i == s * G;
  const int lo = start ? i - G : s * G;
  const int bs = lo / G;  // E_lo is the state or group bs's published prefix
  // Pairs: the group prefix's load is issued before the tile words' loads, so
  // that both are in flight at once (one L2 round trip per tile instead of
  // two in sequence; the words' order of combination is unchanged).
  [[maybe_unused]] unsigned long long wg[kPairs<A> ? Op::W : 1];
  [[maybe_unused]] const A* pg = gslots + static_cast<long long>(bs) * Op::kStride;
  if constexpr (kPairs<A>) {
    if (bs > 0) ld_word_pairs(pg, wg);
  }
  const V R = cln_reduce_published<Op>(flags, slots, lo, i, tile_n, spin);
  V E = state;
  if (bs > 0) {
    const long long nb = n0 + static_cast<long long>(lo) * tile_n;
    if constexpr (kPairs<A>) {
      word_spin(pg, wg, spin);
      E = Op::lift(Op::from_pairs(wg), nb);
    } else {
      int f = flag_relaxed(gflags + bs);
      flag_spin(gflags + bs, f);
      fence_acquire();
      E = Op::lift(Op::load(gslots + static_cast<long long>(bs) * Op::W), nb);
    }
  }
  E = Op::combine(E, R);
  if (start && (threadIdx.x & 31) == 0) cln_publish<Op>(gflags, gslots, s, E);
  return E;
}

// ---------------------------------------------------------------------------
// Sum NA per-frame arrays over the channel rows held by NW warps of threads
// (the register-tile kernels' data threads, the streaming kernels' producer
// warps).  Thread idx holds v[a][k] for frames col * V + k, col = idx % COLS
// (COLS | 32): lanes of one column hold different rows.  The lanes of a
// column are summed by an xor shuffle tree, then the warps in order (fixed
// order: bitwise reproducible).  Frame idx's totals go to out[a] of thread
// idx < BT (0 elsewhere).  One barrier (bar, nthreads) after the warp
// partials are written; the caller's next barrier on it frees red.
// ---------------------------------------------------------------------------
template <int V, int BT, int COLS, int NW, int NA, typename A>
__device__ __forceinline__ void pack_frame_sum(A (&v)[NA][V], A (*red)[NW][BT], int idx, int bar,
                                               int nthreads, A (&out)[NA]) {
  const int lane = idx & 31, warp = idx >> 5;
#pragma unroll
  for (int a = 0; a < NA; ++a)
#pragma unroll
    for (int k = 0; k < V; ++k)
#pragma unroll
      for (int o = COLS; o < 32; o <<= 1) v[a][k] += __shfl_xor_sync(kFullMask, v[a][k], o);
  if (lane < COLS) {
#pragma unroll
    for (int a = 0; a < NA; ++a)
#pragma unroll
      for (int k = 0; k < V; ++k) red[a][warp][lane * V + k] = v[a][k];
  }
  named_barrier(bar, nthreads);
#pragma unroll
  for (int a = 0; a < NA; ++a) {
    A sum = A(0);
    if (idx < BT) {
#pragma unroll
      for (int w = 0; w < NW; ++w) sum += red[a][w][idx];
    }
    out[a] = sum;
  }
}

// The register-tile kernels' form (data threads only, column tc = tid % TPR):
// out[a][f] in shared memory for f < BT, readable by all data threads on
// return.
template <typename G, int NA, typename A>
__device__ __forceinline__ void cln_frame_reduce(A (&v)[NA][G::V], A (*red)[G::NW][G::BT],
                                                 A (*out)[G::BT]) {
  const int tid = threadIdx.x;
  A sums[NA];
  pack_frame_sum<G::V, G::BT, G::TPR, G::NW>(v, red, tid, kBarData, G::NT, sums);
  if (tid < G::BT) {
#pragma unroll
    for (int a = 0; a < NA; ++a) out[a][tid] = sums[a];
  }
  named_barrier(kBarData, G::NT);
}

// Load the R packs of channel chunk `c0` for this thread (zeros outside),
// with L1 behaviour H.
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
// Forward, scan warp.
// ---------------------------------------------------------------------------
// The inclusive Chan scan over the frames of the tile: FPL frames per lane
// sequentially, then a Hillis-Steele shuffle scan over the lane totals.
// In: s_mu / s_m2 = each frame's (mean, M2) over the C channels.  Out:
// s_mu[f] / s_m2[f] = (mean, M2) of frames 0..f of the tile (each lane
// rewrites only its own frames); returns the tile's (mean, M2) on every lane.
template <typename G, typename A>
__device__ __forceinline__ FwdWord<A> cln_fwd_tile_scan(A* s_mu, A* s_m2, int C, int nf) {
  constexpr int BT = G::BT, FPL = G::FPL;
  const int lane = threadIdx.x & 31;
  const A Cn = static_cast<A>(C);
  A ln[FPL], lm[FPL], lM[FPL];
  A n = A(0), m = A(0), M = A(0);
#pragma unroll
  for (int f0 = 0; f0 < FPL; ++f0) {
    const int f = lane * FPL + f0;
    const bool ok = f < BT && f < nf;
    chan_combine(n, m, M, ok ? Cn : A(0), ok ? s_mu[f] : A(0), ok ? s_m2[f] : A(0), n, m, M);
    ln[f0] = n;
    lm[f0] = m;
    lM[f0] = M;
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
#pragma unroll
  for (int f0 = 0; f0 < FPL; ++f0) {
    const int f = lane * FPL + f0;
    if (f < BT) {
      A tn;
      chan_combine(en, em, eM, ln[f0], lm[f0], lM[f0], tn, s_mu[f], s_m2[f]);
    }
  }
  return FwdWord<A>{__shfl_sync(kFullMask, m, 31), __shfl_sync(kFullMask, M, 31)};
}

// The scan warp of tile g: frame scan, publication of the tile aggregate,
// the cross-tile prefix and the per-frame outputs (mean / rstd / m2_last;
// s_mu / s_m2 then hold mu_t and rstd_t).  It does the first hand-off with
// the data warps (frame statistics ready); the caller does the second.
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_fwd_scan_body(const ClnFwdArgs<T, P>& args, int tile,
                                                  acc_t<T>* s_mu, acc_t<T>* s_m2);
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_fwd_scan_warp(const ClnFwdArgs<T, P>& args, int tile,
                                                  acc_t<T>* s_mu, acc_t<T>* s_m2) {
  named_barrier(kBarAll, G::NTT);  // frame statistics ready
  cln_fwd_scan_body<G>(args, tile, s_mu, s_m2);
}

// The scan warp's work once the frame statistics are in s_mu / s_m2, in two
// halves (the streaming kernel of cln_stream.cuh runs them in different
// warps, at different times): G needs BT and FPL only.
// 1. The in-tile frame scan and the publication of the tile aggregate (first,
//    before any wait: no chain through the tiles).  s_mu / s_m2 then hold the
//    in-tile inclusive (mean, M2) of frames 0..f.
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_fwd_tile_publish(const ClnFwdArgs<T, P>& args, int tile,
                                                     acc_t<T>* s_mu, acc_t<T>* s_m2) {
  using A = acc_t<T>;
  using Op = ClnFwdOp<A>;
  const int lane = threadIdx.x & 31;
  const int b = tile % args.B;
  const int i = tile / args.B;
  const int t0 = i * G::BT;
  const FwdWord<A> agg = cln_fwd_tile_scan<G>(s_mu, s_m2, args.C, args.L - t0);
  // The last tile of a sequence has no successor (and is the only partial one).
  if (i + 1 < args.ntiles && lane == 0)
    cln_publish<Op>(args.flags + static_cast<long long>(b) * args.ntiles,
                    args.slots + static_cast<long long>(b) * args.ntiles * kSlotW, i,
                    Op::lift(agg, static_cast<long long>(args.C) * G::BT));
}

// The outputs of frame t of sequence b from its cumulative statistics (n,
// m, M2): mean and rstd where asked for (m2_last, and mean_last where asked
// for, at the last frame).  Returns rstd.
template <typename T, typename P>
__device__ __forceinline__ acc_t<T> cln_frame_out(const ClnFwdArgs<T, P>& args, int b, int t,
                                                   long long n, acc_t<T> m, acc_t<T> M) {
  using A = acc_t<T>;
  // 1 / sqrt rather than rsqrt: correctly rounded, and only once per frame.
  const A r = A(1) / sqrt(M / static_cast<A>(n) + args.eps);
  const long long o = static_cast<long long>(b) * args.L + t;
  if (args.mean != nullptr) {
    args.mean[o] = m;
    args.rstd[o] = r;
  }
  if (t == args.L - 1) {
    args.m2_last[b] = M;
    if (args.mean_last != nullptr) args.mean_last[b] = m;
  }
  return r;
}

// 2. The cross-tile prefix and the per-frame outputs (mean / rstd / m2_last;
//    s_mu / s_m2 then hold mu_t and rstd_t).
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_fwd_tile_finish(const ClnFwdArgs<T, P>& args, int tile,
                                                    acc_t<T>* s_mu, acc_t<T>* s_m2) {
  using A = acc_t<T>;
  using Op = ClnFwdOp<A>;
  using V = typename Op::V;
  constexpr int BT = G::BT, FPL = G::FPL;
  const int lane = threadIdx.x & 31;
  const int C = args.C, L = args.L;
  const int b = tile % args.B;
  const int i = tile / args.B;
  const int t0 = i * BT;
  const long long tile_n = static_cast<long long>(C) * BT;  // a full predecessor tile
  const long long cnt0 = args.count0 ? args.count0[b] : 0LL;
  const V state{cnt0, (args.mean0 && cnt0 > 0) ? args.mean0[b] : A(0),
                (args.m20 && cnt0 > 0) ? args.m20[b] : A(0)};
  const V X = cln_exclusive_prefix<Op>(
      i, args.group, args.flags + static_cast<long long>(b) * args.ntiles,
      args.slots + static_cast<long long>(b) * args.ntiles * kSlotW,
      args.gflags + static_cast<long long>(b) * args.ngroups,
      args.gslots + static_cast<long long>(b) * args.ngroups * kSlotW, state, cnt0, tile_n,
      args.spin);

  // Per-frame inclusive statistics: X (+) frames 0..f of the tile.
#pragma unroll
  for (int f0 = 0; f0 < FPL; ++f0) {
    const int f = lane * FPL + f0;
    const int t = t0 + f;
    if (f < BT && t < L) {
      long long fn;
      A fm, fM;
      chan_combine_i(X.n, X.m, X.M, static_cast<long long>(C) * (f + 1), s_mu[f], s_m2[f], fn, fm,
                     fM);
      s_m2[f] = cln_frame_out(args, b, t, fn, fm, fM);
      s_mu[f] = fm;
    }
  }
}

template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_fwd_scan_body(const ClnFwdArgs<T, P>& args, int tile,
                                                  acc_t<T>* s_mu, acc_t<T>* s_m2) {
  cln_fwd_tile_publish<G>(args, tile, s_mu, s_m2);
  cln_fwd_tile_finish<G>(args, tile, s_mu, s_m2);
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
  pdl_chain_start();  // launched with `pdl`: nothing is read before the launch before ends
  using A = acc_t<T>;
  using G = ClnGeom<T, TPR, R>;
  constexpr int NT = G::NT;
  constexpr int V = G::V, BT = G::BT;

  __shared__ int s_ticket;
  __shared__ A s_red[1][G::NW][BT];
  __shared__ A s_sum[1][BT];
  __shared__ A s_mu[BT];  // chunk mean / frame mean, then mu_t
  __shared__ A s_m2[BT];  // frame M2, then rstd_t

  const int tid = threadIdx.x;
  if (tid == 0) s_ticket = atomicAdd(args.ticket, 1);
  __syncthreads();
  const int tile = s_ticket;  // ticket order, not blockIdx (top comment)

  if (tid >= NT) {  // the scan warp
    cln_fwd_scan_warp<G>(args, tile, s_mu, s_m2);
    named_barrier(kBarAll, G::NTT);  // mu_t / rstd_t ready
    return;
  }

  const int C = args.C, L = args.L;
  const int b = tile % args.B;
  const int t0 = (tile / args.B) * BT;
  const int tr = tid / G::TPR, tc = tid % G::TPR;
  const int tt = t0 + tc * V;  // first frame of this thread's pack
  const int nvalid = L - tt;   // may be <= 0 in the last tile
  const bool vec = args.vec != 0 && nvalid >= V;
  const long long bofs = static_cast<long long>(b) * C * L;
  const T* xb = args.x + bofs;
  const bool once = args.nchunks == 1;

  uint4 pk[R];
  // Per-frame statistics over the channels (data thread tid < BT owns frame
  // tid), Chan-combined over the chunks in a fixed order.
  A fn = A(0), fm = A(0), fM = A(0);
  for (int ch = 0; ch < args.nchunks; ++ch) {
    const int c0 = ch * G::CR;
    // One chunk keeps its data in registers: x is read once per block (no
    // L1 allocation).  Several chunks re-read the tile: keep it in L2 (.cg).
    if (once)
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
    if (!once) cln_load_chunk<G, Ld::kCg>(pk, xb, C, L, c0, tr, tt, vec, nvalid);
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
// Backward, scan warp.
// ---------------------------------------------------------------------------
// Inclusive suffix sums within the tile: per lane backwards over its frames,
// then a shuffle-down scan over the lane totals.  In: s_abc[0..2][f] = a_t,
// b_t, c_t.  Out: s_abc[0..2][f] = their sums over frames f..BT-1 of the
// tile (own frames only); returns the tile's sums on every lane.
template <typename G, typename A>
__device__ __forceinline__ BwdAgg<A> cln_bwd_tile_scan(A (*s_abc)[G::BT]) {
  constexpr int BT = G::BT, FPL = G::FPL;
  const int lane = threadIdx.x & 31;
  A la[FPL], lb[FPL], lc[FPL];
  A sa = A(0), sb = A(0), sc = A(0);
#pragma unroll
  for (int f0 = FPL - 1; f0 >= 0; --f0) {
    const int f = lane * FPL + f0;
    if (f < BT) {
      sa += s_abc[0][f];
      sb += s_abc[1][f];
      sc += s_abc[2][f];
    }
    la[f0] = sa;
    lb[f0] = sb;
    lc[f0] = sc;
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
#pragma unroll
  for (int f0 = 0; f0 < FPL; ++f0) {
    const int f = lane * FPL + f0;
    if (f < BT) {
      s_abc[0][f] = ea + la[f0];
      s_abc[1][f] = eb + lb[f0];
      s_abc[2][f] = ec + lc[f0];
    }
  }
  return BwdAgg<A>{__shfl_sync(kFullMask, sa, 0), __shfl_sync(kFullMask, sb, 0),
                   __shfl_sync(kFullMask, sc, 0)};
}

// The scan warp (as the forward's, tiles counted from the end).  Out:
// s_abc[0][f] = P(t) - S_a(t), s_abc[1][f] = S_b(t).
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_bwd_scan_body(const ClnBwdArgs<T, P>& args, int tile,
                                                  acc_t<T> (*s_abc)[G::BT]);
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_bwd_scan_warp(const ClnBwdArgs<T, P>& args, int tile,
                                                  acc_t<T> (*s_abc)[G::BT]) {
  named_barrier(kBarAll, G::NTT);  // a_t, b_t, c_t ready
  cln_bwd_scan_body<G>(args, tile, s_abc);
}

// The scan warp's work once a_t, b_t, c_t are in s_abc, in two halves as in
// the forward: 1. the in-tile suffix scan and the publication of the tile
// aggregate; 2. the cross-tile prefix, leaving s_abc[0][f] = P(t) - S_a(t),
// s_abc[1][f] = S_b(t).  G needs BT and FPL only.
template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_bwd_tile_publish(const ClnBwdArgs<T, P>& args, int tile,
                                                     acc_t<T> (*s_abc)[G::BT]) {
  using A = acc_t<T>;
  using Op = ClnBwdOp<A>;
  const int lane = threadIdx.x & 31;
  const int b = tile % args.B;
  const int jr = tile / args.B;  // tiles counted from the end
  const typename Op::V agg = cln_bwd_tile_scan<G>(s_abc);
  // The first tile in time has no successor.
  if (jr + 1 < args.ntiles && lane == 0)
    cln_publish<Op>(args.flags + static_cast<long long>(b) * args.ntiles,
                    args.slots + static_cast<long long>(b) * args.ntiles * kSlotW, jr, agg);
}

template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_bwd_tile_finish(const ClnBwdArgs<T, P>& args, int tile,
                                                    acc_t<T> (*s_abc)[G::BT]) {
  using A = acc_t<T>;
  using Op = ClnBwdOp<A>;
  using V = typename Op::V;
  constexpr int BT = G::BT, FPL = G::FPL;
  const int lane = threadIdx.x & 31;
  const int b = tile % args.B;
  const int jr = tile / args.B;
  const V X = cln_exclusive_prefix<Op>(
      jr, args.group, args.flags + static_cast<long long>(b) * args.ntiles,
      args.slots + static_cast<long long>(b) * args.ntiles * kSlotW,
      args.gflags + static_cast<long long>(b) * args.ngroups,
      args.gslots + static_cast<long long>(b) * args.ngroups * kSlotW, Op::identity(), 0LL, 0LL,
      args.spin);
#pragma unroll
  for (int f0 = 0; f0 < FPL; ++f0) {
    const int f = lane * FPL + f0;
    if (f < BT) {
      const A Sa = X.a + s_abc[0][f];
      const A Sb = X.b + s_abc[1][f];
      const A Pp = X.c + s_abc[2][f];
      s_abc[0][f] = Pp - Sa;
      s_abc[1][f] = Sb;
    }
  }
}

template <typename G, typename T, typename P>
__device__ __forceinline__ void cln_bwd_scan_body(const ClnBwdArgs<T, P>& args, int tile,
                                                  acc_t<T> (*s_abc)[G::BT]) {
  cln_bwd_tile_publish<G>(args, tile, s_abc);
  cln_bwd_tile_finish<G>(args, tile, s_abc);
}

// ---------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------
template <typename T, typename P, int TPR, int R, bool KEEP_DY, int MB>
__global__ void __launch_bounds__(ClnGeom<T, TPR, R>::NTT, MB)
    cln_bwd_kernel(const ClnBwdArgs<T, P> args) {
  pdl_chain_start();  // launched with `pdl`: nothing is read before the launch before ends
  using A = acc_t<T>;
  using G = ClnGeom<T, TPR, R>;
  constexpr int NT = G::NT;
  constexpr int V = G::V, BT = G::BT;

  __shared__ int s_ticket;
  __shared__ A s_red[2][G::NW][BT];
  __shared__ A s_g[2][BT];  // per-frame G1, G2
  __shared__ A s_mu[BT], s_r[BT];
  __shared__ A s_abc[3][BT];  // a_t, b_t, b_t * (mu_t - K); then P - S_a, S_b

  const int tid = threadIdx.x;
  if (tid == 0) s_ticket = atomicAdd(args.ticket, 1);
  __syncthreads();
  const int tile = s_ticket;  // ticket order, not blockIdx (top comment)

  if (tid >= NT) {  // the scan warp
    cln_bwd_scan_warp<G>(args, tile, s_abc);
    named_barrier(kBarAll, G::NTT);  // suffix sums ready
    return;
  }

  const int C = args.C, L = args.L;
  const int b = tile % args.B;
  const int t0 = (args.ntiles - 1 - tile / args.B) * BT;
  const int tr = tid / G::TPR, tc = tid % G::TPR;
  const int tt = t0 + tc * V;
  const int nvalid = L - tt;
  const bool vec = args.vec != 0 && nvalid >= V;
  const long long bofs = static_cast<long long>(b) * C * L;
  const T* xb = args.x + bofs;
  const T* dyb = args.dy + bofs;
  const A K = args.mean[static_cast<long long>(b) * L];
  // dgamma / dbeta partials: written once per tile.
  const bool partials = args.partial != nullptr;

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
        if (partials) {
          // The 8 threads of a row hold its 8 packs: xor-reduce within them.
#pragma unroll
          for (int o = 1; o < G::TPR; o <<= 1) {
            pg += __shfl_xor_sync(kFullMask, pg, o);
            pb += __shfl_xor_sync(kFullMask, pb, o);
          }
          if (tc == 0 && c < C) {
            A* pp = args.partial + static_cast<long long>(tile) * 2 * C;
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
  // rstd is re-read from shared memory rather than kept live across the
  // hand-offs (registers: the 16-bit configurations sit at the 128 cap).
  A Sb[V], U[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    U[k] = s_abc[0][tc * V + k];
    Sb[k] = s_abc[1][tc * V + k];
    rs[k] = s_r[tc * V + k];
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
