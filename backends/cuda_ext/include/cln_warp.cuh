// cLN forward, register tiles by blockIdx ("warp tiles"): one block per tile
// of all C channels x BT frames, 16 packs per thread, tiles taken by blockIdx.
// Framework-free (see norm_common.cuh).
//
// Why another register-tile forward.  The register-tile kernels of
// cln_kernels.cuh take tiles by an atomic ticket, lay 7 data warps along the
// channels with a separate scan warp, and keep only R = 3-19 packs per thread
// (a block's tile is 16-68 KB: C x 32 fp32 frames).  The Triton forward, with
// the same idea (the tile in registers across the prefix wait) but 32 KB tiles
// of 64 values per thread taken by program id, reached 0.73-0.80 of copy
// bandwidth in fp32 where this backend's streaming kernels reach 0.64-0.77
// (H200, bench/results/nvidia-h200-s35-cln-peers.md).  This kernel is that
// design in CUDA:
//
//   * A block is NWC warps along the channels x NWT along time.  lane =
//     cl * TL + tl: TL time lanes x CL = 32 / TL channel lanes.  A thread
//     holds R 16-byte packs of V frames (4 fp32, 8 fp16 / bf16): pack r is
//     channel wc * CPW + r * CL + cl (CPW = R * CL channels per warp) at
//     frames t0 + w * FW + tl * V + [0, V), FW = TL * V frames per warp,
//     BT = NWT * FW per tile.  One load instruction covers CL channel rows x
//     TL * 16 contiguous bytes; TL = 8 everywhere (128-byte lines).  The
//     first version laid every warp along time (NWC = 1), so that a frame's
//     sums never left a warp, at the price of TL = 32 / CL: 64-, 32- and
//     16-byte row pieces per load at C = 128, 256, 512; it ran 0.27-0.53 of
//     copy bandwidth (bench/results/nvidia-h200-s36a-*, -s36b-*).
//   * A frame's statistics: V sums in registers over the R packs, an xor
//     butterfly over the CL channel lanes (the same bits in every lane), then
//     the NWC channel warps' partials through shared memory, added in warp
//     order.  Exact two passes (the sum, then the squared deviations from the
//     frame mean), as the other kernels.
//   * The in-tile Chan scan: over the V frames of a thread, then over the TL
//     time lanes (shuffles), then over the NWT time warps (their totals
//     through shared memory).  Every thread of a frame holds the same bits.
//   * Warp 0 publishes the tile aggregate and reduces the exclusive prefix
//     of earlier tiles (cln_exclusive_prefix of cln_kernels.cuh: the same
//     words, groups and fixed order), then one thread per frame finishes
//     mu_t and rstd_t, and the block writes y.
//   * Tiles by blockIdx (tile g = i * B + b), as CUB's single-pass scan and
//     the Triton kernels take them: a block waits only on tiles of lower
//     blockIdx, which the hardware dispatches first.  Triton measured the
//     atomic ticket's round trip at 1.1-1.5 us of a 9-11 us tile life
//     (backends/triton/kernels.py, CLN_TICKET_ATOMIC).  The CPU emulator
//     runs blocks in blockIdx order.
//   * The first wave of blocks spreads its loads over stagger_ns (Triton's
//     CLN_FWD_STAGGER_NS: launched together, a wave queues all its loads at
//     once and finishes in bursts).
//
// Outputs, streaming state and the prefix words are those of cln_fwd_kernel;
// the per-value arithmetic is its exact form, y = (x - mu_t) * rstd_t * gamma
// + beta.
#pragma once

#include <type_traits>

#include "cln_kernels.cuh"

namespace normk {

template <typename T, int TL_, int R_, int NWC_, int NWT_>
struct WarpGeom {
  static constexpr int V = PackInfo<T>::V;
  static constexpr int TL = TL_;        // time lanes per warp
  static constexpr int CL = 32 / TL_;   // channel lanes per warp
  static constexpr int R = R_;          // packs per thread
  static constexpr int NWC = NWC_;      // warps along the channels
  static constexpr int NWT = NWT_;      // warps along time
  static constexpr int NW = NWC_ * NWT_;
  static constexpr int FW = TL_ * V;    // frames per warp
  static constexpr int BT = NWT_ * FW;  // frames per tile
  static constexpr int CPW = R_ * CL;   // channels per warp
  static constexpr int CAP = NWC_ * CPW;  // channels a tile holds
  static constexpr int NT = NW * 32;
  static_assert(TL_ >= 1 && TL_ <= 32 && 32 % TL_ == 0, "TL must divide 32");
};

// %globaltimer in ns (0 on the emulator, where the stagger is skipped).
__device__ __forceinline__ unsigned long long global_ns() {
#ifdef NORMK_HOST_EMULATION
  return 0ull;
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

// Rounds of 32 prefix words in flight (cln_reduce_published; the order of combination, so
// the result, does not depend on it): 2 instead of kPrefixU's 4 leaves the registers to the
// tile.
constexpr int kWarpPrefixU = 4;

// Value k of a pack for the kernel's passes.  bfloat16: the shift / mask as an opaque
// instruction, so that each pass unpacks again instead of the compiler keeping the 128
// unpacked values of the tile live between the passes (ptxas, sm_90: 490 bytes spilled at
// 168 registers otherwise).
template <typename T>
__device__ __forceinline__ float warp_get(const uint4& u, int k) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
#ifdef NORMK_HOST_EMULATION
    return Elem<T>::get(u, k);
#else
    const uint32_t w = pack_word(u, k >> 1);
    uint32_t r;
    if (k & 1)
      asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(r) : "r"(w));
    else
      asm volatile("shl.b32 %0, %1, 16;" : "=r"(r) : "r"(w));
    return __uint_as_float(r);
#endif
  } else {
    return Elem<T>::get(u, k);
  }
}

// The tile loads' cache policy.  Plain ld.global (cached in L1, as Triton's loads): the
// first version's ld.global.nc.L1::no_allocate ran (2, 128, 64000) fp32 at 59.8 us
// (bench/results/nvidia-h200-s36c-diag-warp.log).
constexpr Ld kWarpLd = Ld::kCa;

// The R packs of a thread (channels c0 + r * CL; zeros past C or past T).
template <Ld H, int R, int CL, typename T>
__device__ __forceinline__ void warp_load(uint4 (&pk)[R], const T* xb, int off, int step, int c0,
                                          int C, bool vec, int nvalid) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int c = c0 + r * CL;
    pk[r] = (c < C && nvalid > 0) ? load_pack<T, H>(xb + (off + r * step), vec, nvalid)
                                  : make_uint4(0u, 0u, 0u, 0u);
  }
}

// The NWC channel warps' sums of frame f (this thread's frames f0 .. f0 + V), added in warp
// order (the same bits in every channel warp).  One barrier; `red` is not reused.
template <int NWC, int BT, int V, typename A>
__device__ __forceinline__ void warp_channel_sum(A (&v)[V], A (*red)[BT], int wc, int f0,
                                                 bool writer) {
  if constexpr (NWC > 1) {
    if (writer) {
#pragma unroll
      for (int k = 0; k < V; ++k) red[wc][f0 + k] = v[k];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < V; ++k) {
      A t = red[0][f0 + k];
#pragma unroll
      for (int u = 1; u < NWC; ++u) t += red[u][f0 + k];
      v[k] = t;
    }
  }
}

template <typename T, typename P, int TL, int R, int NWC, int NWT, int MB>
__global__ void __launch_bounds__(NWC * NWT * 32, MB)
    cln_fwd_warp_kernel(const ClnFwdArgs<T, P> args) {
  pdl_chain_start();  // launched with `pdl`: nothing is read before the launch before ends
  using A = acc_t<T>;
  using G = WarpGeom<T, TL, R, NWC, NWT>;
  using Op = ClnFwdOp<A>;
  using Vt = typename Op::V;
  constexpr int V = G::V, CL = G::CL, FW = G::FW, BT = G::BT;
  constexpr int NW = NWT;  // the scan's warps: one per time slice

  // The channel warps' partial frame sums (the mean pass, the M2 pass).
  __shared__ A s_red1[NWC > 1 ? NWC : 1][BT], s_red2[NWC > 1 ? NWC : 1][BT];
  __shared__ A s_wn[NW], s_wm[NW], s_wM[NW];  // each time warp's frames combined
  __shared__ A s_xn[NW], s_xm[NW], s_xM[NW];  // the frames of the time warps before it
  __shared__ long long s_pn;                  // the cross-tile exclusive prefix
  __shared__ A s_pm, s_pM;
  // Each frame's statistics within its warp (n, mean, M2), then (-, mu_t, rstd_t).
  __shared__ A s_fn[BT], s_fm[BT], s_fM[BT];

  const int tile = blockIdx.x;
  if (args.stagger_ns > 0 && tile < args.stagger_w) {  // the first wave's stagger
    const unsigned long long until =
        global_ns() + static_cast<unsigned long long>(args.stagger_ns) * tile / args.stagger_w;
    while (global_ns() < until) __nanosleep(200);
  }

  const int lane = threadIdx.x & 31, wc = (threadIdx.x >> 5) % NWC, w = (threadIdx.x >> 5) / NWC;
  const int tl = lane % TL, cl = lane / TL;
  const int c0 = wc * G::CPW + cl;  // this thread's first channel
  const int C = args.C, L = args.L;
  const int b = tile % args.B;
  const int i = tile / args.B;
  const int t0 = i * BT;
  const int tt = t0 + w * FW + tl * V;  // first frame of this thread's packs
  const int nvalid = L - tt;            // may be <= 0 in the last tile
  const bool vec = args.vec != 0 && nvalid >= V;
  const long long bofs = static_cast<long long>(b) * C * L;
  // 32-bit offsets within one sequence (the launcher checks C * L < 2^31): the addresses
  // of the 16 packs are not kept as 64-bit pointers across the prefix wait.
  const int off = c0 * L + tt, step = CL * L;
  const T* xb = args.x + bofs;

  uint4 pk[R];
  warp_load<kWarpLd, R, CL>(pk, xb, off, step, c0, C, vec, nvalid);
  const int fw0 = w * FW + tl * V;  // this thread's first frame in the tile

  // ---- per-frame mean and M2 over the C channels (rows past C hold zeros) ----
  const A Cf = static_cast<A>(C);
  A mu[V], q[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    A s = A(0);
#pragma unroll
    for (int r = 0; r < R; ++r) s += warp_get<T>(pk[r], k);
#pragma unroll
    for (int o = TL; o < 32; o <<= 1) s += __shfl_xor_sync(kFullMask, s, o);
    mu[k] = s;
    q[k] = A(0);
  }
  warp_channel_sum<NWC, BT>(mu, s_red1, wc, fw0, cl == 0);
#pragma unroll
  for (int k = 0; k < V; ++k) mu[k] = mu[k] / Cf;
  if (C == G::CAP) {  // every row holds a channel: no select per value
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const A d = warp_get<T>(pk[r], k) - mu[k];
        q[k] += d * d;
      }
  } else {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool ok = c0 + r * CL < C;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const A d = ok ? warp_get<T>(pk[r], k) - mu[k] : A(0);
        q[k] += d * d;
      }
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k)
#pragma unroll
    for (int o = TL; o < 32; o <<= 1) q[k] += __shfl_xor_sync(kFullMask, q[k], o);
  warp_channel_sum<NWC, BT>(q, s_red2, wc, fw0, cl == 0);

  // ---- in-tile scan: this thread's V frames, then its time lanes (within the warp) ----
  A n = A(0), m = A(0), M = A(0);
  A fn[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {  // inclusive over the thread's frames, kept in mu / q
    chan_combine(n, m, M, tt + k < L ? Cf : A(0), mu[k], q[k], n, m, M);
    fn[k] = n;
    mu[k] = m;
    q[k] = M;
  }
#pragma unroll
  for (int o = 1; o < TL; o <<= 1) {  // within the TL lanes of one channel lane
    const A on = __shfl_up_sync(kFullMask, n, o);
    const A om = __shfl_up_sync(kFullMask, m, o);
    const A oM = __shfl_up_sync(kFullMask, M, o);
    if (tl >= o) chan_combine(on, om, oM, n, m, M, n, m, M);
  }
  A en = __shfl_up_sync(kFullMask, n, 1);  // this lane's exclusive prefix in the warp
  A em = __shfl_up_sync(kFullMask, m, 1);
  A eM = __shfl_up_sync(kFullMask, M, 1);
  if (tl == 0) en = em = eM = A(0);
  // Channel lane 0 keeps its frames' statistics within the warp in shared memory (every
  // channel lane holds the same bits): nothing of the scan stays in registers across the
  // prefix wait but the tile.
  if (cl == 0 && wc == 0) {
#pragma unroll
    for (int k = 0; k < V; ++k)
      chan_combine(en, em, eM, fn[k], mu[k], q[k], s_fn[fw0 + k], s_fm[fw0 + k], s_fM[fw0 + k]);
  }
  if (lane == TL - 1 && wc == 0) {
    s_wn[w] = n;
    s_wm[w] = m;
    s_wM[w] = M;
  }
  __syncthreads();

  // ---- warp 0: the tile aggregate's publication and the cross-tile prefix ----
  if (threadIdx.x < 32) {
    if (lane == 0) {  // the warps' exclusive prefixes in the tile, in order, and the aggregate
      A an = A(0), am = A(0), aM = A(0);
      for (int v = 0; v < NW; ++v) {
        s_xn[v] = an;
        s_xm[v] = am;
        s_xM[v] = aM;
        chan_combine(an, am, aM, s_wn[v], s_wm[v], s_wM[v], an, am, aM);
      }
      if (i + 1 < args.ntiles)  // the last tile has no successor
        cln_publish<Op>(args.flags + static_cast<long long>(b) * args.ntiles,
                        args.slots + static_cast<long long>(b) * args.ntiles * kSlotW, i,
                        Op::lift(FwdWord<A>{am, aM}, static_cast<long long>(C) * BT));
    }
    const long long cnt0 = args.count0 ? args.count0[b] : 0LL;
    const Vt state{cnt0, (args.mean0 && cnt0 > 0) ? args.mean0[b] : A(0),
                   (args.m20 && cnt0 > 0) ? args.m20[b] : A(0)};
    // args.diag = 1 (timing only, wrong outputs): the cross-tile wait left out.
    const Vt X = args.diag == 1 ? state : cln_exclusive_prefix<Op, kWarpPrefixU>(
        i, args.group, args.flags + static_cast<long long>(b) * args.ntiles,
        args.slots + static_cast<long long>(b) * args.ntiles * kSlotW,
        args.gflags + static_cast<long long>(b) * args.ngroups,
        args.gslots + static_cast<long long>(b) * args.ngroups * kSlotW, state, cnt0,
        static_cast<long long>(C) * BT);
    if (lane == 0) {
      s_pn = X.n;
      s_pm = X.m;
      s_pM = X.M;
    }
  }
  __syncthreads();
  // ---- mu_t and rstd_t of every frame (and the mean / rstd / m2_last outputs), one
  // thread per frame: the prefix, the frame's warp's exclusive prefix, then its own ----
  for (int f = threadIdx.x; f < BT; f += G::NT) {
    const int t = t0 + f;
    if (t < L) {
      A xn, xm, xM;
      chan_combine(s_xn[f / FW], s_xm[f / FW], s_xM[f / FW], s_fn[f], s_fm[f], s_fM[f], xn, xm,
                   xM);
      long long gn;
      A gm, gM;
      chan_combine_i(s_pn, s_pm, s_pM, static_cast<long long>(xn), xm, xM, gn, gm, gM);
      s_fM[f] = cln_frame_out(args, b, t, gn, gm, gM);
      s_fm[f] = gm;
    }
  }
  __syncthreads();
  A rs[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    mu[k] = s_fm[fw0 + k];
    rs[k] = s_fM[fw0 + k];
  }

  // ---- y = (x - mu_t) * rstd_t * gamma + beta ----
  T* yb = args.y + bofs;
  if (nvalid > 0) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int c = c0 + r * CL;
      if (c < C) {
        const A gm = args.gamma ? load_param<P, A>(args.gamma, c) : A(1);
        const A bt = args.beta ? load_param<P, A>(args.beta, c) : A(0);
        A out[V];
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = (warp_get<T>(pk[r], k) - mu[k]) * rs[k] * gm + bt;
        store_pack<T>(yb + (off + r * step), out, vec, nvalid);
      }
    }
  }
}

}  // namespace normk
