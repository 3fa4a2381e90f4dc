// Cumulative layer norm, forward and backward: persistent, warp-specialized
// kernels that stream tiles through a ring of shared-memory stages.
// Framework-free (norm_common.cuh).
//
// Why a second design.  The register-tile kernels of cln_kernels.cuh hold a
// whole tile (BT frames x all C channels) in registers, one tile per block.
// On an H200 they reached 0.32-0.51 (fp32) / 0.24-0.33 (bf16) of copy
// bandwidth forward; a load-store-only skeleton of that design (Triton)
// capped at 0.72-0.80 (fp32) / 0.64-0.68 (bf16): each block's loads are in
// flight only until its tile has arrived, then the SM computes, waits for
// the prefix and stores with few bytes in flight (25% occupancy, register
// bound) (bench/results/NOTES.md sections 6-7).  These kernels reach
// 0.61-0.73 (fp32) / 0.44-0.56 (bf16) forward on the same shapes (NOTES 10).
//
// Each block is persistent (a grid of SMs x occupancy blocks, all resident
// at once: a cooperative launch) and owns a ring of S stages in shared
// memory, each holding one tile ([C][BT] elements: row c = channel c's BT
// frames), loaded with the TMA (tma.cuh: one thread per tile, completing on a
// per-stage mbarrier; y / dx written back into the stage and stored by the
// TMA) where the call allows it, else with cp.async.  Block b takes the tiles b, b + grid,
// b + 2 grid, ... (tile g = i * B + batch item, i the tile index in time), so
// at any moment the blocks work on one window of consecutive tiles.  (Time
// order, g = b * ntiles + i, lengthened the DRAM runs but made every tile wait
// on the one just started: fwd (4, 256, 16000) fp32 0.62 -> 0.52; NOTES 12.2.)  Its
// warps have three roles, each on a different tile of the ring:
//
// (StreamRoles below: warp numbers for the 256-thread blocks; the 512-thread
// blocks where one block per SM fits have 8 producer and 7 output warps)
//   * producer (warps 4-7): issues the tiles' copies and, as each lands,
//     computes its per-frame statistics, runs the in-tile frame scan and
//     publishes the tile aggregate (cln_fwd_tile_publish); hands the stage
//     over (named barrier FULL[s]).
//   * scan warp (warp 0): the tile's cross-tile prefix and per-frame
//     statistics (cln_fwd_tile_finish); hands over (READY[s]).
//   * output warps (1-3): y from the stage; refill it (TMA path) or give it
//     back to the producer (EMPTY[s]); see the ring protocol below.
//
// What decided this (H200, bench/results/nvidia-h200-s4-*.log, forward at
// (16, 512, 4000) fp32 unless said; fraction of copy bandwidth):
//   - All 8 warps through the ring in order (stats, prefix wait, output)
//     with tiles claimed by tickets: 0.30-0.32, below the register kernels
//     (0.51).  A tile's aggregate waited behind its block's earlier tiles'
//     prefix waits, and a block's ring held tickets far apart, so the waits
//     chained from block to block (tune-stream-v1 and v2, the latter with
//     the producer / consumer split: some 3-4-stage cases fell to
//     0.04-0.06).  The fixed tile schedule above removed the chains (v3: no
//     collapse anywhere, 0.35 here).
//   - gamma and beta read from global memory per output row (L1 hit rate
//     0.02 % next to the ring, an L2 round trip per row) made even the
//     load-store skeleton latency bound: 0.49; from shared memory 0.75 and
//     the kernel 0.35 -> 0.59 (diag-stream-gamma-global vs -before-scan-split).
//   - The scan warp apart from the output warps (the prefix wait of tile
//     k + 1 overlaps the output of tile k): 0.59 -> 0.64; (2, 128, 64000)
//     fp32 with 2 stages 0.52 -> 0.53 (diag-stream).
//   - Ring shape: final-tune-cln-defaults and the notes in
//     csrc/cln_common.h (stream_plan).
//
// Ring protocol (S stages; the block's k-th tile in stage k % S).  The
// producer's step k waits for tile k's copies, publishes its statistics and
// arrives at FULL[k % S]; the scan warp takes FULL[s] and arrives at
// READY[s]; the output warps take READY[s], write the tile out, and the stage
// is refilled with tile k + S in one of two ways:
//   * refill by the output warps (the TMA path's default, lead 0): the thread
//     that stored the tile, once the TMA has read it, loads tile k + S into
//     the stage itself.  A stage turns around as soon as its tile is written,
//     whatever the producer is doing: S tiles are in flight or in process.
//   * producer lead D (1 <= D <= S - 1; the cp.async path, whose copies are
//     issued by all producer threads, and any forced CLN_STREAM_LEAD): the
//     output warps arrive at EMPTY[s]; the producer's step k, after the
//     publication, waits at EMPTY[(k - D) % S] and refills that stage with
//     tile k + S - D.  So S - 1 - D tiles are in flight while the producer
//     computes, S - D once it has refilled, and a stage waits for the
//     producer's statistics of a later tile before it is refilled.
//   H200, 3 stages refilled by the output warps against the 2-3 stages of
//   lead 1 the plan took before (two A/B rounds in one call, fraction of copy
//   bandwidth, fwd / fwd+bwd; bench/results/nvidia-h200-s12d-ab-refill-*.log,
//   NOTES 15): (4, 256, 16000) fp32 0.62-0.63 / 0.61 -> 0.65 / 0.64, (2, 128,
//   64000) fp32 0.60 / 0.57 -> 0.63 / 0.60-0.61, bf16 (16, 512, 4000) 0.61-0.62
//   / 0.55-0.56 -> 0.64 / 0.58, (2, 128, 64000) bf16 0.43-0.44 / 0.40 -> 0.42-0.43
//   / 0.43; 3 stages with lead 1 gained only in the backward, 4 stages with
//   the refill lost (0.32-0.62 forward: one block per SM).
// Every barrier instance completes before the next one on the same stage
// starts (each hand-off waits for the previous one), and with lead D the
// producer collects the last EMPTY arrivals before the block exits.
//
// No deadlock: a tile waits only on tiles with smaller indices.  Let m be
// the smallest unfinished tile, the k-th of block b.  b's producer reaches
// step k and m's copies land (its EMPTY waits, or with the output warps'
// refill the load of m that they issue, depend on b's tiles before m,
// finished), m's statistics are published, all tiles before m are published, so b's scan
// warp and output warps finish m.  This needs every block resident, which
// the cooperative launch guarantees (or refuses with
// cudaErrorCooperativeLaunchTooLarge instead of hanging, e.g. when MPS or
// another context holds part of the GPU; CLN_STREAM_PPR = -1 then selects
// the register kernels, which take tiles by ticket and never need that).
//
// Tile geometry (StreamGeom): PPR 16-byte packs per row, BT = PPR * V
// frames (V = 16 / sizeof(T)).  Producer statistics: thread p (of 128) takes
// frame p % BT and the channels p / BT (mod 128 / BT): consecutive lanes
// read consecutive words (no bank conflicts); the per-frame partials of the
// channel groups are summed in a fixed order.  Output: thread o (of 96)
// takes pack column o % PPR of rows o / PPR + k * (96 / PPR): 16-byte shared
// loads and 16-byte global stores, consecutive threads on consecutive packs
// of a row.
//
// The cross-tile prefix and the in-tile frame scan are those of
// cln_kernels.cuh (the same fixed-order two-level prefix: bitwise
// deterministic).  The launcher (csrc/cln_common.h, stream_plan) picks PPR,
// S and D; shapes whose 2-stage ring does not fit the shared memory use the
// register-tile kernels.
#pragma once

#include "cln_kernels.cuh"

namespace normk {

// 4 producer warps of 256 threads rather than 8 of 384 (2 blocks per SM at 80
// registers instead of 3): 8 gained only where one block per SM fits anyway,
// bf16 (16, 512, 4000) fwd 0.55 -> 0.57, and lost elsewhere, (2, 128, 64000)
// bf16 0.44 -> 0.40, one 2e6-frame sequence fp32 0.70 -> 0.49 (H200, A/B in one
// call, bench/results/nvidia-h200-s8d-ab-*.log, NOTES 11.6).
//
// The warp roles of a streaming block (StreamRoles<NP, NO>): threads [0, 32)
// are the scan warp, [32, 32 + NO) the output warps, the next NP the
// producer.  The named barriers' thread counts follow: PROD NP; FULL[s]
// (producer -> scan warp) NP arrive + 32 wait; READY[s] (scan warp -> output
// warps) 32 + NO; EMPTY[s] (output warps -> producer) NO + NP; OUT NO.
template <int NP, int NO>
struct StreamRoles {
  static constexpr int kProd = NP;  // producer threads
  static constexpr int kOut = NO;   // output threads
  static constexpr int kCons = 32 + NO;  // consumer threads: the scan warp and the output warps
  static constexpr int kThreads = kCons + NP;
  static constexpr int kProdWarps = NP / 32;
  static constexpr int kFullCount = NP + 32;
  static constexpr int kReadyCount = 32 + NO;
  static constexpr int kEmptyCount = NO + NP;
  static_assert(NP % 32 == 0 && NO % 32 == 0 && NP >= 128, "whole warps, a producer of >= 4");
};
// Where the ring leaves room for several blocks per SM: 4 producer warps, 3 output
// warps, 256 threads.
using StreamRolesStd = StreamRoles<128, 96>;
// Where one block per SM is all the ring leaves room for (csrc/cln_common.h,
// stream_one_block): 8 producer warps, 7 output warps, 512 threads (at most 128
// registers; these kernels take 76-96).  One block of 8 warps per SM left the
// producer (statistics, and the backward's dgamma / dbeta partials) and output
// loops few warps to hide their latencies: 16 warps took the backward's fwd+bwd
// 5-7 % faster at the four such target cases, the forward 2 % (fp32) and 7 %
// (bf16) at (16, 512, 4000) (csrc/cln_fwd.cu, csrc/cln_bwd.cu).  More producer
// warps where they cost blocks per SM lost (below).
using StreamRolesWide = StreamRoles<256, 224>;
constexpr int kStreamMaxStages = 4;
// Blocks per SM the forward's registers allow (256 threads at <= 80
// registers; launch bounds below), for the launcher's plan.
constexpr int kStreamMaxBlocksPerSm = 3;
// Named barriers (0 is __syncthreads); their thread counts: StreamRoles.
constexpr int kBarProd = 1;
constexpr int kBarFull = 2;
constexpr int kBarReady = kBarFull + kStreamMaxStages;
constexpr int kBarEmpty = kBarReady + kStreamMaxStages;
// TMA path: the output warps among themselves (their y is in the stage
// before one of them stores it).
constexpr int kBarOut = kBarEmpty + kStreamMaxStages;
static_assert(kBarOut + 1 <= 16, "16 hardware barriers per block");

// Shared-memory layout of a streaming block, used by the kernels and by the
// launcher's plan (csrc/cln_common.h) alike.  A stage holds one tile
// ([C][BT] elements, C * PPR * 16 bytes); the backward's also holds dy's tile
// and the tile's mean and rstd frames (2 * BT values of A, a multiple of 16
// bytes for PPR >= 4, so every part starts 16-byte aligned).
template <typename T>
__host__ __device__ constexpr long long stream_stage_bytes(long long C, int ppr, bool bwd) {
  return bwd ? 2 * C * ppr * 16 + 2LL * ppr * PackInfo<T>::V * sizeof(acc_t<T>)
             : C * ppr * 16;
}
// After the S stages: the affine parameters as A (forward gamma and beta,
// backward gamma), and in the backward the block's dgamma / dbeta sums (2 C
// of A; see cln_bwd_stream_kernel).
template <typename T>
__host__ __device__ constexpr long long stream_after_ring_bytes(long long C, bool bwd) {
  return C * static_cast<long long>(sizeof(acc_t<T>)) * (bwd ? 3 : 2);
}

template <typename T, int PPR_, typename R = StreamRolesStd>
struct StreamGeom {
  static constexpr int V = PackInfo<T>::V;
  static constexpr int PPR = PPR_;              // 16-byte packs per channel row of a tile
  static constexpr int BT = PPR * V;            // frames per tile
  static constexpr int RPI = R::kProd / PPR;    // rows per step of the producer's loops
  static constexpr int RPO = R::kOut / PPR;     // rows per step of the output loop
  static constexpr int FPL = (BT + 31) / 32;     // frames per lane of the warp scans
  static_assert(PPR <= 32 && 32 % PPR == 0 && R::kOut % PPR == 0 && BT <= R::kProd,
                "bad stream tile shape");
};

// Wait until at most d (0..3) of this thread's committed copy groups are
// still in flight.
__device__ __forceinline__ void cp_async_wait_depth(int d) {
  if (d <= 0)
    cp_async_wait<0>();
  else if (d == 1)
    cp_async_wait<1>();
  else if (d == 2)
    cp_async_wait<2>();
  else
    cp_async_wait<3>();
}

// Issue one half's copies of a tile: C rows of BT frames from frame t0 of
// the sequence at `src` (row stride L) into dst[C][BT]; frames past L are
// zero-filled.  h: the thread's index in its half.  vec: 16-byte copies (L %
// V == 0 and src 16-byte aligned); else element copies (cp.async for 4- and
// 8-byte types; plain loads and shared stores for 16-bit ones, which
// cp.async cannot copy alone).
template <typename G, typename T>
__device__ __forceinline__ void stream_issue_tile(T* dst, const T* src, int C, int L, int t0,
                                                  bool vec, int h) {
  constexpr int V = G::V, BT = G::BT;
  const int j = h % G::PPR;
  const int tt = t0 + j * V;
  if (vec) {
    const bool ok = tt < L;  // L % V == 0: a pack is all in or all out
    for (int c = h / G::PPR; c < C; c += G::RPI)
      cp_async<16>(dst + c * BT + j * V, ok ? src + static_cast<long long>(c) * L + tt : src, ok);
  } else {
    for (int c = h / G::PPR; c < C; c += G::RPI) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const bool ok = tt + k < L;
        const T* s = ok ? src + static_cast<long long>(c) * L + tt + k : src;
        if constexpr (sizeof(T) >= 4)
          cp_async<sizeof(T)>(dst + c * BT + j * V + k, s, ok);
        else
          dst[c * BT + j * V + k] = ok ? *s : Elem<T>::from_acc(0.0f);
      }
    }
  }
}

// TMA path: the tile (C rows of BT frames of batch item b from frame t0)
// into dst[C][BT], in boxes of cbox rows (cbox | C), completing on bar; the
// caller has announced the bytes (mbar_arrive_expect_tx).  One thread.
template <typename T>
__device__ __forceinline__ void stream_tma_load_tile(T* dst, const CUtensorMap* map, mbar_t* bar,
                                                     int C, int cbox, int BT, int t0, int b) {
  for (int c0 = 0; c0 < C; c0 += cbox) tma_load_3d(dst + c0 * BT, map, t0, c0, b, bar);
}
// TMA path, output warps: store the tile the output threads have written
// into src[C][BT] (each thread fenced its writes with fence_proxy_async), and
// wait until the TMA has read it, so that the stage can be handed back.
// Frames past T are clipped by the TMA.  o: the thread's index among the
// output threads.
template <typename R, typename T>
__device__ __forceinline__ void stream_tma_store_tile(const T* src, const CUtensorMap* map, int C,
                                                      int cbox, int BT, int t0, int b, int o) {
  named_barrier(kBarOut, R::kOut);
  if (o == 0) {
    for (int c0 = 0; c0 < C; c0 += cbox) tma_store_3d(map, src + c0 * BT, t0, c0, b);
    tma_commit();
    tma_wait_read<0>();
  }
}

// The producer half's ring schedule (shared by both directions).  The
// block's tiles are first, first + stride, ... below ntot (tile k of the
// block in stage k % S).
//   issue(s, tile): the half's copies of `tile` into stage s (the caller commits)
//   stats(s, tile): its statistics and publication (may use producer barriers)
//   full: nullptr for cp.async copies; the TMA path's per-stage mbarriers
//         (issue announces and starts the copies; the u-th fill of a stage
//         completes its phase u)
//   refill: the output warps refill the stages (stream_consumer; TMA path):
//         the producer neither waits at EMPTY nor refills, and D is unused.
//   D: the lead (the call's; 0, the automatic lead, is 1 where the producer refills).
template <typename R, typename Issue, typename Stats>
__device__ __forceinline__ void stream_producer(int first, int stride, int ntot, int S, int D,
                                                mbar_t* full, bool refill, Issue&& issue,
                                                Stats&& stats) {
  if (D < 1) D = 1;
  const auto tile_of = [&](int k) { return first + k * stride; };
  for (int s = 0; s < S; ++s) {
    if (tile_of(s) < ntot) issue(s, tile_of(s));
    if (!full) cp_async_commit();  // one group per tile slot, empty or not
  }
  int k = 0;
  for (; tile_of(k) < ntot; ++k) {
    const int s = k % S;
    if (full) {
      mbar_wait(&full[s], static_cast<unsigned>(k / S) & 1u);  // tile k has landed
    } else {
      // Groups committed so far: S + max(0, k - D), tile k being group k.
      cp_async_wait_depth(k < D ? S - 1 - k : S - 1 - D);
      named_barrier(kBarProd, R::kProd);  // all the producer's copies of tile k have landed
    }
    stats(s, tile_of(k));
    named_barrier_arrive(kBarFull + s, R::kFullCount);
    if (!refill && k >= D) {
      const int sr = (k - D) % S;
      named_barrier(kBarEmpty + sr, R::kEmptyCount);  // the output warps are done with tile k - D
      if (tile_of(k + S - D) < ntot) issue(sr, tile_of(k + S - D));
      if (!full) cp_async_commit();
    }
  }
  // Collect the consumer's last hand-backs (tiles k - D .. k - 1), so that
  // every barrier is complete when the block exits.
  if (!refill)
    for (int t = k - D < 0 ? 0 : k - D; t < k; ++t)
      named_barrier(kBarEmpty + t % S, R::kEmptyCount);
  if (!full) cp_async_wait<0>();
}

// TMA path: the ring's mbarriers, one arrival (the issuing thread's) per
// fill; before the block's first __syncthreads.
// ring: the dynamic shared memory, whose 128-byte alignment the boxes need
// (the launcher checked the offsets within it).
__device__ __forceinline__ void stream_init_full(mbar_t* full, int S, const void* ring) {
  if (threadIdx.x == 0) {
#ifndef NORMK_HOST_EMULATION
    if ((smem_addr(ring) & 127u) != 0) __trap();
#else
    (void)ring;
#endif
    for (int s = 0; s < S; ++s) mbar_init(&full[s], 1);
    mbar_init_fence();
  }
}

// The consumer half.  Its scan warp (warp 0) runs finish(s, tile) (the
// cross-tile wait) for each of the block's tiles once the producer has handed
// it over, and passes it on; the output warps (1-3, or 1-7) run out(s, tile, o) (o:
// the thread's index among them) and give the stage back.  So the scan warp
// waits for tile k + 1's prefix while the output warps write tile k: with
// one consumer loop (wait, then output, all 4 warps) the wait was on the
// critical path of every tile.
// refill (TMA path, the producer's flag): after out(), the output warps' first thread (the
// one that stored the tile and waited until the TMA had read it) loads the block's tile S
// later into the stage with load(s, tile), instead of handing the stage back to the producer.
template <typename R, typename Finish, typename Out, typename Load>
__device__ __forceinline__ void stream_consumer(int first, int stride, int ntot, int S,
                                                bool refill, Finish&& finish, Out&& out,
                                                Load&& load) {
  const int tid = threadIdx.x;
  if (tid < 32) {
    for (int k = 0; first + k * stride < ntot; ++k) {
      const int s = k % S;
      named_barrier(kBarFull + s, R::kFullCount);
      finish(s, first + k * stride);
      named_barrier_arrive(kBarReady + s, R::kReadyCount);
    }
  } else {
    for (int k = 0; first + k * stride < ntot; ++k) {
      const int s = k % S;
      named_barrier(kBarReady + s, R::kReadyCount);
      out(s, first + k * stride, tid - 32);
      if (!refill) {
        named_barrier_arrive(kBarEmpty + s, R::kEmptyCount);
      } else if (tid == 32 && first + (k + S) * stride < ntot) {
        load(s, first + (k + S) * stride);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Forward.  Producer, per tile: frame means (pass 1 over the stage), frame
// M2 about them (pass 2: exact two-pass statistics), the in-tile scan and
// the tile aggregate.  Consumer: the prefix, then
// y = (x - mu_t) * rstd_t * gamma + beta from the stage.
// ---------------------------------------------------------------------------
// At most 80 registers (3 blocks of 256 per SM, the plan's kStreamMaxBlocksPerSm), 2 blocks
// (128) for fp64: with 16-byte statistics loads ptxas took 84-85 for fp32 unbounded, which
// would have left room for 2 blocks only.
// The wide roles (one block per SM): at most 128 registers.
template <typename T, typename R>
constexpr int stream_fwd_min_blocks() {
  return R::kThreads > StreamRolesStd::kThreads ? 1 : sizeof(T) == 8 ? 2 : kStreamMaxBlocksPerSm;
}

template <typename T, typename P, int PPR, typename R>
__global__ void __launch_bounds__(R::kThreads, stream_fwd_min_blocks<T, R>())
    cln_fwd_stream_kernel(const __grid_constant__ ClnFwdArgs<T, P> args) {
  pdl_chain_start();  // launched with `pdl`: nothing is read before the launch before ends
  using A = acc_t<T>;
  using G = StreamGeom<T, PPR, R>;
  constexpr int V = G::V, BT = G::BT;

  __shared__ A s_mu[kStreamMaxStages][BT];  // frame mean -> in-tile scan -> mu_t
  __shared__ A s_m2[kStreamMaxStages][BT];  // frame M2 -> in-tile scan -> rstd_t
  __shared__ A s_red[1][R::kProdWarps][BT];  // the producer warps' partials
  __shared__ mbar_t s_full[kStreamMaxStages];     // TMA path: a stage's tile has landed
  T* const ring = dynamic_smem<T>();

  const int C = args.C, L = args.L;
  const int ntot = args.B * args.ntiles;
  const int S = args.nstages;
  const int tile_elems = C * BT;
  const bool vec = args.vec != 0;
  const bool tma = args.tma != 0;
  const int tid = threadIdx.x;
  if (tma) stream_init_full(s_full, S, ring);
  // gamma and beta (as A) after the ring.  Read from shared memory: read
  // from global memory in the output loop (an L2 round trip per row, L1
  // hit rate 0.02 % next to the 192 KB ring) they made the load-store
  // skeleton of this kernel latency bound at 0.46-0.64 of copy bandwidth.
  A* const s_gm = reinterpret_cast<A*>(ring + S * tile_elems);
  A* const s_bt = s_gm + C;
  for (int c = tid; c < C; c += R::kThreads) {
    s_gm[c] = args.gamma ? load_param<P, A>(args.gamma, c) : A(1);
    s_bt[c] = args.beta ? load_param<P, A>(args.beta, c) : A(0);
  }
  __syncthreads();
  // TMA path: tile `tile` into stage s (one thread).
  auto tma_load = [&](int s, int tile) {
    mbar_arrive_expect_tx(&s_full[s], static_cast<unsigned>(tile_elems * sizeof(T)));
    stream_tma_load_tile(ring + s * tile_elems, &args.tm_x, &s_full[s], C, args.cbox, BT,
                         (tile / args.B) * BT, tile % args.B);
  };
  const bool refill = tma && args.lead == 0;  // lead 0: the output warps refill

  if (tid >= R::kCons) {  // ---- producer ----
    const int h = tid - R::kCons;
    // Statistics: thread h sums pack column j of rows r0, r0 + RPI, ... (16-byte
    // shared loads, V frames each; a warp reads 512 contiguous bytes).  It
    // replaced one frame per thread with element loads (16-bit words for
    // bf16: 16x the load instructions), measured in bench/results/NOTES.md 10.
    // Two passes (sum, then squared deviations from the frame mean) rather than
    // one: a one-pass form (chunks of 4 rows, exact in registers, Chan-merged per
    // thread and over the threads) saves a reduction and a barrier but costs more
    // arithmetic in these 4 warps, and was slower on the H200 (forward, alternated
    // in one call: bf16 (16, 512, 4000) 0.56 -> 0.47, (4, 256, 16000) 0.50 -> 0.41;
    // fp32 (16, 512, 4000) 0.72-0.73 -> 0.71; NOTES 11.5, -s8c-ab-*.log).
    const int j = h % G::PPR, r0 = h / G::PPR;
    const A inv_c = A(1) / static_cast<A>(C);
    auto issue = [&](int s, int tile) {
      if (tma) {
        if (h == 0) tma_load(s, tile);
        return;
      }
      stream_issue_tile<G>(ring + s * tile_elems,
                           args.x + static_cast<long long>(tile % args.B) * C * L, C, L,
                           (tile / args.B) * BT, vec, h);
    };
    auto stats = [&](int s, int tile) {
      if (args.diag == 2) return;  // timing diagnostic: no statistics, no publication
      const uint4* tl = reinterpret_cast<const uint4*>(ring + s * tile_elems);
      // The shift (kShiftFrameSums): the frames' values in the tile's first channel row.
      const bool shift = shift_tile<T>(args, tile, BT);
      A v[1][V], sum[1], kf[V];
      const uint4 u0 = shift ? tl[j] : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[0][k] = A(0);
        kf[k] = Elem<T>::get(u0, k);
      }
      if (shift) {
        for (int c = r0; c < C; c += G::RPI) {
          const uint4 u = tl[c * G::PPR + j];
#pragma unroll
          for (int k = 0; k < V; ++k) v[0][k] += Elem<T>::get(u, k) - kf[k];
        }
      } else {  // the other tiles: no subtraction per value
        for (int c = r0; c < C; c += G::RPI) {
          const uint4 u = tl[c * G::PPR + j];
#pragma unroll
          for (int k = 0; k < V; ++k) v[0][k] += Elem<T>::get(u, k);
        }
      }
      pack_frame_sum<V, BT, PPR, R::kProdWarps>(v, s_red, h, kBarProd, R::kProd, sum);
      if (h < BT) {
        const A kt = shift ? Elem<T>::to_acc(ring[s * tile_elems + h]) : A(0);
        s_mu[s][h] = kt + sum[0] * inv_c;
      }
      named_barrier(kBarProd, R::kProd);
      A mf[V];
#pragma unroll
      for (int k = 0; k < V; ++k) {
        mf[k] = s_mu[s][j * V + k];
        v[0][k] = A(0);
      }
      for (int c = r0; c < C; c += G::RPI) {
        const uint4 u = tl[c * G::PPR + j];
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const A d = Elem<T>::get(u, k) - mf[k];
          v[0][k] += d * d;
        }
      }
      pack_frame_sum<V, BT, PPR, R::kProdWarps>(v, s_red, h, kBarProd, R::kProd, sum);
      if (h < BT) s_m2[s][h] = sum[0];
      named_barrier(kBarProd, R::kProd);
      if (h < 32) cln_fwd_tile_publish<G>(args, tile, s_mu[s], s_m2[s]);
    };
    stream_producer<R>(blockIdx.x, gridDim.x, ntot, S, args.lead, tma ? s_full : nullptr,
                       refill, issue, stats);
    return;
  }

  // ---- consumer ----
  auto finish = [&](int s, int tile) {
    // Timing diagnostic: no cross-tile wait, constant statistics (1, 2: every tile; 3: the
    // first round's tiles, the grid's first tile each; 4: the last round's).
    const int grid = static_cast<int>(gridDim.x);
    if (args.diag == 1 || args.diag == 2 || (args.diag == 3 && tile < grid) ||
        (args.diag == 4 && tile >= ntot - grid)) {
      for (int f = tid; f < BT; f += 32) {
        s_mu[s][f] = A(0);
        s_m2[s][f] = A(1);
      }
    } else {
      cln_fwd_tile_finish<G>(args, tile, s_mu[s], s_m2[s]);
    }
  };
  auto out = [&](int s, int tile, int o) {
    const int j = o % PPR, r0 = o / PPR;
    const int b = tile % args.B;
    const int tt = (tile / args.B) * BT + j * V;
    const int nvalid = L - tt;
    A mu[V], rs[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      mu[k] = s_mu[s][j * V + k];
      rs[k] = s_m2[s][j * V + k];
    }
    if (tma) {
      // y in place of x in the stage (each thread rewrites the packs it read),
      // then one TMA store of the tile; frames past T are computed from the
      // zero fill and clipped by the store.
      T* tw = ring + s * tile_elems;
#pragma unroll 4
      for (int c = r0; c < C; c += G::RPO) {
        uint4* p = reinterpret_cast<uint4*>(tw + c * BT + j * V);
        const uint4 u = *p;
        const A gm = s_gm[c], bt = s_bt[c];
        A y[V];
#pragma unroll
        for (int k = 0; k < V; ++k) y[k] = (Elem<T>::get(u, k) - mu[k]) * rs[k] * gm + bt;
        *p = to_pack<T>(y);
      }
      fence_proxy_async();
      stream_tma_store_tile<R>(tw, &args.tm_y, C, args.cbox, BT, (tile / args.B) * BT, b, o);
      return;
    }
    if (nvalid <= 0) return;
    const bool vst = vec && nvalid >= V;
    const T* tl = ring + s * tile_elems;
    T* yb = args.y + static_cast<long long>(b) * C * L;
#pragma unroll 4
    for (int c = r0; c < C; c += G::RPO) {
      const uint4 u = *reinterpret_cast<const uint4*>(tl + c * BT + j * V);
      const A gm = s_gm[c], bt = s_bt[c];
      A y[V];
#pragma unroll
      for (int k = 0; k < V; ++k) y[k] = (Elem<T>::get(u, k) - mu[k]) * rs[k] * gm + bt;
      store_pack<T>(yb + static_cast<long long>(c) * L + tt, y, vst, nvalid);
    }
  };
  stream_consumer<R>(blockIdx.x, gridDim.x, ntot, S, refill, finish, out, tma_load);
  if (tma && tid == 32) tma_wait<0>();  // the storing thread: every store complete
}

// ---------------------------------------------------------------------------
// Backward (tiles counted from the last one, as in cln_kernels.cuh).  A
// stage holds the x tile, the dy tile and the tile's (mean, rstd) frames.
// Producer: per-frame G1 = sum_c g, G2 = sum_c g * xhat (g = dy * gamma) and
// the per-tile dgamma / dbeta partials (per channel, the sums over the tile's
// frames of dy * xhat and dy; reduced afterwards in a fixed order) in one
// pass, a_t, b_t, c_t, the in-tile suffix scan and the tile aggregate.
// Consumer: the prefix, then dx = r * g - (x - K) * S_b + (P - S_a).
// ---------------------------------------------------------------------------
// Stage layout: [x: C*BT T][dy: C*BT T][mean: BT A][rstd: BT A] (see
// stream_stage_bytes).
//
// dgamma / dbeta: each block sums its tiles' per-channel partials in shared
// memory (channel c always by the same producer thread, in the block's tile
// order) and writes one row of args.partial, (gridDim.x, 2, C), at its end;
// the launcher's column sums add the gridDim.x rows.  The order depends on
// the grid (SMs x blocks per SM), so the result is bitwise reproducible on
// one kind of GPU.  (One row per tile before: 16 MB written and summed back
// at (16, 512, 4000), a 7.8 + 2.9 us pair of column-sum launches under ncu;
// bench/results/nvidia-h200-s52-ncu52-main.txt.)  Per block instead of per tile:
// fwd+bwd (16, 512, 4000) fp32 302 -> 289 us, bf16 157 -> 151 us; (4, 256, 16000)
// fp32 143.5 -> 139.7, bf16 94.6 -> 90.3; (2, 128, 64000) within 0.5-2.6 us (H100,
// alternated twice in one call, bench/results/nvidia-h100-s61-ab-*; NOTES 60.1).

// The 256-thread fp32 kernel bounded to 3 blocks per SM (<= 80 registers), as the
// forward's: since the output warps refill the stages ptxas takes 80-90 unbounded (90 at
// PPR 4, which would leave room for 2 blocks of a 3-block plan); bounded, 72, no spills.
// 16-bit types take 95 (2 blocks), fp64 72.
template <typename T, typename R>
constexpr int stream_bwd_min_blocks() {
  return R::kThreads == StreamRolesStd::kThreads && sizeof(T) == 4 ? kStreamMaxBlocksPerSm : 1;
}

template <typename T, typename P, int PPR, typename R>
__global__ void __launch_bounds__(R::kThreads, stream_bwd_min_blocks<T, R>())
    cln_bwd_stream_kernel(const __grid_constant__ ClnBwdArgs<T, P> args) {
  pdl_chain_start();  // launched with `pdl`: nothing is read before the launch before ends
  using A = acc_t<T>;
  using G = StreamGeom<T, PPR, R>;
  constexpr int V = G::V, BT = G::BT;
  static_assert((2 * BT * sizeof(A)) % 16 == 0, "stage parts must stay 16-byte aligned");

  __shared__ A s_abc[kStreamMaxStages][3][BT];  // a_t, b_t, c_t -> in-tile suffix -> P - S_a, S_b
  __shared__ A s_red[2][R::kProdWarps][BT];  // the producer warps' partials
  __shared__ mbar_t s_full[kStreamMaxStages];     // TMA path: a stage's tiles have landed
  unsigned char* const ring = dynamic_smem<unsigned char>();

  const int C = args.C, L = args.L;
  const int ntot = args.B * args.ntiles;
  const int S = args.nstages;
  const long long stage_bytes = stream_stage_bytes<T>(C, PPR, true);
  const int tile_elems = C * BT;
  const bool vec = args.vec != 0;
  const bool tma = args.tma != 0;
  const int tid = threadIdx.x;
  if (tma) stream_init_full(s_full, S, ring);
  // gamma (as A) after the ring, read by both halves.
  A* const s_gamma = reinterpret_cast<A*>(ring + S * stage_bytes);
  if (args.gamma)
    for (int c = tid; c < C; c += R::kThreads) s_gamma[c] = load_param<P, A>(args.gamma, c);
  // The block's dgamma (first C) and dbeta sums.
  A* const s_part = s_gamma + C;
  const bool partials = args.partial != nullptr;
  if (partials)
    for (int c = tid; c < 2 * C; c += R::kThreads) s_part[c] = A(0);
  __syncthreads();

  auto stage_x = [&](int s) { return reinterpret_cast<T*>(ring + s * stage_bytes); };
  auto stage_dy = [&](int s) { return stage_x(s) + tile_elems; };
  auto stage_mr = [&](int s) { return reinterpret_cast<A*>(stage_x(s) + 2 * tile_elems); };
  auto first_frame = [&](int tile) { return (args.ntiles - 1 - tile / args.B) * BT; };
  // TMA path: tile `tile`'s x, dy, mean and rstd into stage s (one thread).
  auto tma_load = [&](int s, int tile) {
    const int b = tile % args.B;
    const int t0 = first_frame(tile);
    mbar_t* bar = &s_full[s];
    mbar_arrive_expect_tx(bar, static_cast<unsigned>(stage_bytes));
    stream_tma_load_tile(stage_x(s), &args.tm_x, bar, C, args.cbox, BT, t0, b);
    stream_tma_load_tile(stage_dy(s), &args.tm_dy, bar, C, args.cbox, BT, t0, b);
    tma_load_2d(stage_mr(s), &args.tm_mean, t0, b, bar);
    tma_load_2d(stage_mr(s) + BT, &args.tm_rstd, t0, b, bar);
  };
  const bool refill = tma && args.lead == 0;  // lead 0: the output warps refill

  if (tid >= R::kCons) {  // ---- producer ----
    const int h = tid - R::kCons;
    const int j = h % G::PPR, r0 = h / G::PPR;  // pack column, first row (as the forward)
    auto issue = [&](int s, int tile) {
      const int b = tile % args.B;
      const int t0 = first_frame(tile);
      if (tma) {
        if (h == 0) tma_load(s, tile);
        return;
      }
      const long long bofs = static_cast<long long>(b) * C * L;
      stream_issue_tile<G>(stage_x(s), args.x + bofs, C, L, t0, vec, h);
      stream_issue_tile<G>(stage_dy(s), args.dy + bofs, C, L, t0, vec, h);
      for (int e = h; e < 2 * BT; e += R::kProd) {  // mean (e < BT), rstd of the frames
        const int fr = e % BT;
        const bool ok = t0 + fr < L;
        const A* src = (e < BT ? args.mean : args.rstd) + static_cast<long long>(b) * L;
        cp_async<sizeof(A)>(stage_mr(s) + e, ok ? src + t0 + fr : src, ok);
      }
    };
    auto stats = [&](int s, int tile) {
      const T* xt = stage_x(s);
      const T* gt = stage_dy(s);
      const A* s_mu = stage_mr(s);
      const A* s_r = s_mu + BT;
      const int b = tile % args.B;
      const int t0 = first_frame(tile);
      // Issued first: their L2 round trip overlaps the channel loop.
      const A K = args.mean[static_cast<long long>(b) * L];
      const long long cnt0 = args.count ? args.count[b] : 0LL;
      // Frames past L: dy = 0 there, so both sums vanish.
      A mf[V], rf[V], g12[2][V], sums[2];
#pragma unroll
      for (int k = 0; k < V; ++k) {
        mf[k] = s_mu[j * V + k];
        rf[k] = s_r[j * V + k];
        g12[0][k] = g12[1][k] = A(0);
      }
      // The tile's dgamma / dbeta partials in the same pass (per channel: the sums
      // over the tile's frames of dy * xhat and dy; the PPR lanes of a row are
      // consecutive, PPR | 32).  They were the output warps' (3 warps against these
      // 4, which had the lighter loop): fwd+bwd (4, 256, 16000) fp32 138 -> 128 us,
      // bf16 (16, 512, 4000) 161 -> 150 us, the rest within 1 % (H200, alternated
      // twice, bench/results/nvidia-h200-s10b-*).  A uniform trip count over the
      // producer: the shuffles need whole warps.  Added to the block's sums by the
      // lane j == 0 of the row, the one thread that ever adds to channel c.
      for (int cb = 0; cb < C; cb += G::RPI) {
        const int c = cb + r0;
        const bool row = c < C;
        const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
        const A gm = (args.gamma && row) ? s_gamma[c] : A(1);
        const uint4 ux = row ? *reinterpret_cast<const uint4*>(xt + c * BT + j * V) : zero;
        const uint4 ug = row ? *reinterpret_cast<const uint4*>(gt + c * BT + j * V) : zero;
        A pg = A(0), pb = A(0);
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const A dyv = Elem<T>::get(ug, k);
          const A xh = (Elem<T>::get(ux, k) - mf[k]) * rf[k];
          const A g = dyv * gm;
          g12[0][k] += g;
          g12[1][k] += g * xh;
          pg += dyv * xh;
          pb += dyv;
        }
        if (partials) {
#pragma unroll
          for (int o2 = 1; o2 < PPR; o2 <<= 1) {
            pg += __shfl_xor_sync(kFullMask, pg, o2);
            pb += __shfl_xor_sync(kFullMask, pb, o2);
          }
          if (j == 0 && row) {
            s_part[c] += pg;
            s_part[C + c] += pb;
          }
        }
      }
      pack_frame_sum<V, BT, PPR, R::kProdWarps>(g12, s_red, h, kBarProd, R::kProd, sums);
      const A s1 = sums[0], s2 = sums[1];
      if (h < BT) {
        const int t = t0 + h;
        A a_ = A(0), b_ = A(0), c_ = A(0);
        if (t < L) {
          const A n = static_cast<A>(cnt0 + static_cast<long long>(C) * (t + 1));
          const A r = s_r[h];
          a_ = r * s1 / n;
          b_ = r * r * s2 / n;
          c_ = b_ * (s_mu[h] - K);
        }
        s_abc[s][0][h] = a_;
        s_abc[s][1][h] = b_;
        s_abc[s][2][h] = c_;
      }
      named_barrier(kBarProd, R::kProd);
      if (h < 32) cln_bwd_tile_publish<G>(args, tile, s_abc[s]);
    };
    stream_producer<R>(blockIdx.x, gridDim.x, ntot, S, args.lead, tma ? s_full : nullptr,
                       refill, issue, stats);
    if (partials && j == 0) {  // the block's row, each channel by the thread that summed it
      A* const row = args.partial + static_cast<long long>(blockIdx.x) * 2 * C;
      for (int c = r0; c < C; c += G::RPI) {
        row[c] = s_part[c];
        row[C + c] = s_part[C + c];
      }
    }
    return;
  }

  // ---- consumer ----
  auto finish = [&](int s, int tile) { cln_bwd_tile_finish<G>(args, tile, s_abc[s]); };
  auto out = [&](int s, int tile, int o) {
    const int j = o % PPR, r0 = o / PPR;
    const int b = tile % args.B;
    const A K = args.mean[static_cast<long long>(b) * L];
    const int tt = first_frame(tile) + j * V;
    const int nvalid = L - tt;
    const T* xt = stage_x(s);
    const T* gt = stage_dy(s);
    const A* s_r = stage_mr(s) + BT;
    A rs[V], U[V], Sb[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      rs[k] = s_r[j * V + k];
      U[k] = s_abc[s][0][j * V + k];
      Sb[k] = s_abc[s][1][j * V + k];
    }
    const bool vst = vec && nvalid >= V;
    T* dxb = args.dx + static_cast<long long>(b) * C * L;
#pragma unroll 2
    for (int c = r0; c < C; c += G::RPO) {
      const uint4 ux = *reinterpret_cast<const uint4*>(xt + c * BT + j * V);
      const uint4 ug = *reinterpret_cast<const uint4*>(gt + c * BT + j * V);
      const A gm = args.gamma ? s_gamma[c] : A(1);
      A dx[V];
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const A xv = Elem<T>::get(ux, k), dyv = Elem<T>::get(ug, k);
        dx[k] = rs[k] * (dyv * gm) - (xv - K) * Sb[k] + U[k];
      }
      if (tma) {
        // dx in place of dy in the stage (the TMA stores it below).
        *reinterpret_cast<uint4*>(const_cast<T*>(gt) + c * BT + j * V) = to_pack<T>(dx);
      } else if (nvalid > 0) {
        store_pack<T>(dxb + static_cast<long long>(c) * L + tt, dx, vst, nvalid);
      }
    }
    if (tma) {
      fence_proxy_async();
      stream_tma_store_tile<R>(gt, &args.tm_dx, C, args.cbox, BT, first_frame(tile), b, o);
    }
  };
  stream_consumer<R>(blockIdx.x, gridDim.x, ntot, S, refill, finish, out, tma_load);
  if (tma && tid == 32) tma_wait<0>();  // the storing thread: every store complete
}

}  // namespace normk
