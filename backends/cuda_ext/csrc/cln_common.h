// cLN launch configuration tables, the cross-tile plan and the workspace
// layout (shared by cln_fwd.cu and cln_bwd.cu).
//
// Cross-tile scheme (include/cln_kernels.cuh has the full story): one block
// per tile, taken in ticket order, publishes its tile aggregate and then
// reduces its exclusive prefix from the earlier tiles' words in a fixed
// order, two-level (tile words within a group of G tiles, plus one group
// prefix per group).  It replaced the decoupled look-back, which reached
// only 0.31-0.49 of copy bandwidth forward on an H200 (its serial walk over
// the predecessors is L2-latency bound) and whose result depended on
// timing.  The one per-call choice (plan()) is G, group_tiles from
// backends/cuda_ext/kernels.py (CLN_GROUP_TILES, 256) at every call, so a
// GPU sweep needs no rebuild; G changes the summation grouping, so the last
// bits.  G = 256 beat 1024 on long sequences ((2, 128, 64000) fp32 fwd 0.31
// vs 0.27 of copy bandwidth, bf16 0.23 vs 0.19) and was neutral elsewhere.
// Split STATS / NORMALIZE roles (two blocks per tile, the second re-reading
// it from L2) were measured slower on every shape (e.g. (16, 512, 4000)
// fp32 fwd 0.43-0.45 vs 0.50) and removed.
//
// Configurations (224 data threads + 1 scan warp per block): Cfg<TPR, R, MB>
// holds R channel rows per thread, TPR threads per row (8: 128-byte row
// segments; 4: 64-byte ones, used where 8 would need more registers than
// fit), MB blocks per SM for __launch_bounds__.  A call takes the first entry
// whose chunk CR = R * 224 / TPR covers C (the tile then stays in
// registers); past the last one, the last entry loops over channel chunks.
// Every entry compiles without spills for sm_90 (tests/test_cuda_ext_build.py
// checks ptxas):
//
//   fwd fp32          C <= 84, 140, 280, 532   regs 56 / 63 / 80 / 121
//   fwd fp16, bf16    C <= 84, 140, 280, 560   (V = 8: wider per-frame arrays,
//                                                so 64-byte rows past 280)
//   fwd fp64          C <= 84, 280, 560
//   bwd fp32          C <= 84, 140 (dy kept in registers), 280, 560 (dy
//                     prefetched to L1 and re-read)
//   bwd bf16          C <= 84, 140, 280 (dy kept); chunked beyond
//   bwd fp16          C <= 84 (dy kept), 140, 280 (dy through L1); chunked
//   bwd fp64          C <= 84 (dy kept), 280, 560
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "cln_kernels.cuh"
#include "cln_resident.cuh"
#include "cln_stream.cuh"
#include "launch_util.h"
#include "tma_host.h"

namespace normk {
namespace cln_detail {

template <int TPR_, int R_, int MB_>
struct Cfg {
  static constexpr int TPR = TPR_, R = R_, MB = MB_;
  static constexpr long long kCap = static_cast<long long>(R_) * (224 / TPR_);  // = CR
};
template <int TPR_, int R_, bool KEEP_, int MB_>
struct BCfg : Cfg<TPR_, R_, MB_> {
  static constexpr bool KEEP = KEEP_;  // dy stays in registers
};

template <typename T>
struct FwdCfgs {  // fp16 / bf16
  using type = CfgList<Cfg<8, 3, 4>, Cfg<8, 5, 3>, Cfg<8, 10, 2>, Cfg<4, 10, 2>>;
};
template <>
struct FwdCfgs<float> {
  using type = CfgList<Cfg<8, 3, 4>, Cfg<8, 5, 4>, Cfg<8, 10, 3>, Cfg<8, 19, 2>>;
};
template <>
struct FwdCfgs<double> {
  using type = CfgList<Cfg<8, 3, 3>, Cfg<8, 10, 2>, Cfg<4, 10, 2>>;
};

template <typename T>
struct BwdCfgs {  // fp16 / bf16
  using type = CfgList<BCfg<8, 3, true, 2>, BCfg<8, 5, true, 2>, BCfg<4, 5, true, 2>>;
};
// fp16 converts to f32 with one more register per value than bf16 (a shift);
// with dy kept in registers the C <= 140 / 280 entries needed 4 bytes of
// spill under the 128 cap (measured with the split-role logic, since
// removed; not retried), so dy goes through L1 there.
template <>
struct BwdCfgs<__half> {
  using type = CfgList<BCfg<8, 3, true, 2>, BCfg<8, 5, false, 2>, BCfg<4, 5, false, 2>>;
};
template <>
struct BwdCfgs<float> {
  using type = CfgList<BCfg<8, 3, true, 3>, BCfg<8, 5, true, 2>, BCfg<8, 10, false, 2>,
                       BCfg<4, 10, false, 2>>;
};
template <>
struct BwdCfgs<double> {
  using type = CfgList<BCfg<8, 3, true, 2>, BCfg<8, 10, false, 2>, BCfg<4, 10, false, 2>>;
};

// The cross-tile plan of a call (see include/cln_kernels.cuh): one block
// (and ticket) per tile, the group size G.  group_tiles <= 0: the default.
struct Plan {
  long long ntiles, ntot, group, ngroups;
};
inline Plan plan(long long B, long long L, int bt, int64_t group_tiles) {
  Plan p{};
  p.ntiles = cdiv(L, bt);
  p.ntot = B * p.ntiles;
  const long long g = group_tiles > 0 ? group_tiles : kClnGroupDefault;
  p.group = g < p.ntiles ? g : p.ntiles;
  p.ngroups = cdiv(p.ntiles, p.group);
  return p;
}

// Workspace: [ticket | flags (ntot ints) | group flags (B x ngroups ints)
//             | slots (ntot x kSlotW acc) | group slots (B x ngroups x kSlotW acc)
//             | partials (prows x 2C acc: a row per tile of the register-tile
//               kernels, per block of the streaming kernel) | colsum scratch
//             | 2C acc sink].
// prows = 0: no partials (the forward, a backward without dgamma / dbeta).
// Zeroed: the ticket and the flags, and with float accumulators the slots
// too (they hold the ready flags: kPairs, include/norm_common.cuh).
struct Layout {
  size_t flags, gflags, slots, gslots, partial, scratch, sink, total, zero_bytes;
};
inline Layout layout(size_t acc, long long ntot, long long ngtot, long long C, long long prows) {
  Layout l{};
  l.flags = 256;
  l.gflags = l.flags + 4 * static_cast<size_t>(ntot);
  l.zero_bytes = l.gflags + 4 * static_cast<size_t>(ngtot);
  l.slots = align_up(l.zero_bytes, 256);
  l.gslots = align_up(l.slots + kSlotW * acc * ntot, 256);
  l.partial = align_up(l.gslots + kSlotW * acc * ngtot, 256);
  if (acc == sizeof(float) && kPairs<float>) l.zero_bytes = l.partial;  // flags in the slots
  l.scratch = l.partial;
  l.sink = l.partial;
  l.total = l.partial;
  if (prows > 0) {
    l.scratch = align_up(l.partial + 2 * acc * static_cast<size_t>(prows) * C, 256);
    l.sink = align_up(l.scratch + acc * colsum_scratch_elems(prows, static_cast<int>(2 * C)), 256);
    l.total = l.sink + 2 * acc * C;
  }
  return l;
}

inline void check_sizes(const char* op, long long B, long long C, long long L, long long bt) {
  if (B < 1 || C < 1 || L < 1 || C > (1LL << 30) || L > (1LL << 30) ||
      B * cdiv(L, bt) >= (1LL << 30))
    throw std::runtime_error(std::string("cuda_ext: ") + op +
                             ": sizes out of range (need 1 <= C, L <= 2^30 and fewer than "
                             "2^30 tiles)");
}

// ---------------------------------------------------------------------------
// The streaming kernels (include/cln_stream.cuh).  PPR values compiled (16-byte
// packs per channel row of a tile: 64-, 128- and 256-byte row segments).
using StreamPprs = std::integer_sequence<int, 4, 8, 16>;
// Dynamic shared memory of one streaming block (227 KB is the sm_90 limit;
// the rest is left to the static arrays and L1), and the stage size aimed at.
constexpr size_t kStreamSmemBudget = 200 * 1024;
constexpr size_t kStreamStageTarget = 64 * 1024;

struct StreamPlan {
  int ppr = 0;  // 0: use the register-tile kernels
  int stages = 0;
  int lead = 0;
  size_t smem = 0;  // dynamic shared memory bytes
};

// Shared memory of an SM (sm_90: 228 KB, 1 KB of it reserved per block) and
// the static shared arrays of a streaming block (at most ~6 KB), for the
// automatic plan; kStreamMaxBlocksPerSm (cln_stream.cuh): the blocks its
// registers allow.
constexpr size_t kSmemPerSm = 228 * 1024;
constexpr size_t kStreamStaticSmem = 6 * 1024;

// The streaming plan of a call from the knobs (stream_ppr: -1 the
// register-tile kernels, 0 automatic, else forced; stream_stages S and
// stream_lead D: 0 automatic, else forced, 2 <= S <= 4, 1 <= D <= S - 1) and
// the sizes.  A forced value that cannot be met throws; a shape whose
// 2-stage ring does not fit takes the register kernels (fp32 forward past
// C = 1505: 2 x 64-byte rows x C + gamma, beta > 200 KB).
//
// Automatic (PPR, S in 2..3): the most bytes of stages per SM (blocks per SM
// x S x stage, in 16 KB steps), then the most blocks per SM, then the widest
// rows, over rows of 128 B or more whose stage fits kStreamStageTarget
// (64-byte rows only when nothing else fits); PPR then narrows (not below
// 128-byte rows) while the call has fewer than 2 tiles per SM.  The lead:
// 0 (the output warps refill the stages; cln_stream.cuh) where the call takes
// the TMA path (tma_likely), and then S = 3 wherever 3 stages of 128-byte rows
// fit: its stages turn around without waiting for the producer, and the third
// one paid where, refilled by the producer, it had not (H200, 3 stages against
// the 2-3 that lead 1 took, two A/B rounds, fwd / fwd+bwd: (4, 256, 16000)
// fp32 0.62-0.63 / 0.61 -> 0.65 / 0.64, (2, 128, 64000) fp32 0.60 / 0.57 ->
// 0.63 / 0.60-0.61; 3 stages at lead 1 0.64-0.65 / 0.62-0.63 and 0.59 /
// 0.58; bench/results/nvidia-h200-s12d-ab-refill-*.log).  Elsewhere D = 1
// (D = 2-3 with 3-4 stages was slower at every target shape:
// -s8-tune-cln-sweep.log). Measured on the H200
// (bench/results/nvidia-h200-s4-tune-stream-v4.log, fwd / fwd+bwd fraction
// of copy bandwidth): at (2, 128, 64000) fp32 a 4-deep ring of 32 KB stages
// (one block per SM) 0.37 / 0.34, 2 stages (three blocks per SM) 0.52 /
// 0.45, 16 KB stages 0.39 / 0.42, 64-byte rows 0.25 / 0.27; at (16, 512,
// 4000) fp32, where one block of 64 KB stages fits, 3 stages 0.64-0.65, 2
// stages 0.57; at (4, 256, 16000) fp32 three blocks of two 32 KB stages 0.56
// / 0.47, one block of three 64 KB stages 0.54 / 0.47.
template <typename T, int... Ps>
StreamPlan stream_plan(std::integer_sequence<int, Ps...>, long long B, long long C, long long L,
                       bool bwd, int64_t want_ppr, int64_t want_stages, int64_t want_lead,
                       bool tma_likely, const char* op) {
  StreamPlan sp;
  if (want_ppr < 0) return sp;
  constexpr int V = PackInfo<T>::V;
  constexpr int avail[] = {Ps...};  // ascending powers of two
  const auto stage = [&](int ppr) {
    return static_cast<size_t>(stream_stage_bytes<T>(C, ppr, bwd));
  };
  const size_t fixed = static_cast<size_t>(stream_after_ring_bytes<T>(C, bwd));
  const auto fits = [&](int ppr, int st) { return st * stage(ppr) + fixed <= kStreamSmemBudget; };
  const auto fail = [&](const std::string& why) {
    throw std::runtime_error(std::string("cuda_ext: ") + op + ": " + why);
  };
  if (want_stages != 0 && (want_stages < 2 || want_stages > kStreamMaxStages))
    fail("stream_stages must be 0 (automatic) or 2.." + std::to_string(kStreamMaxStages));
  int ppr = 0;
  if (want_ppr > 0) {
    std::string list;
    for (int a : avail) {
      if (a == want_ppr) ppr = a;
      list += (list.empty() ? "" : ", ") + std::to_string(a);
    }
    if (ppr == 0)
      fail("stream_ppr " + std::to_string(want_ppr) + " is not compiled (choices: " + list +
           "; -1: register-tile kernels; 0: automatic)");
  }
  int st = static_cast<int>(want_stages);
  // The output warps refill the stages (lead 0) where the call takes the TMA path: then
  // 3 stages (below), else 2-3.
  const bool refill = want_lead <= 0 && tma_likely;
  if (ppr == 0 || st == 0) {
    // Score the candidates: stage bytes per SM, then blocks per SM, then row width.
    long long best = -1;
    int bp = 0, bs = 0;
    // pass 0: 3 stages where the output warps refill them, rows of 128 bytes or more;
    // pass 1: 2-3 stages; pass 2: 64-byte rows too.
    for (int pass = refill ? 0 : 1; pass < 3 && bp == 0; ++pass) {
      for (int a : avail) {
        if (ppr != 0 && a != ppr) continue;
        // (The backward's stage adds 2 * BT statistics to its tiles: not counted.)
        if (ppr == 0 && ((pass < 2 && a * 16 < 128) || stage(a) > kStreamStageTarget + 4096))
          continue;
        for (int s2 = pass == 0 ? 3 : 2; s2 <= 3; ++s2) {
          if (st != 0 && s2 != st) continue;
          if (!fits(a, s2)) continue;
          const size_t per_block = s2 * stage(a) + fixed + kStreamStaticSmem + 1024;
          long long blocks = static_cast<long long>(kSmemPerSm / per_block);
          if (blocks > kStreamMaxBlocksPerSm) blocks = kStreamMaxBlocksPerSm;
          // Bytes in flight per SM (in 16 KB steps), then blocks per SM, then row width.
          // Steps, not KB: at (2, 128, 64000) bf16 the backward's 256-byte rows (65 KB
          // stages with their statistics) won by 3 KB with one block of 3 stages over
          // three blocks of 2 x 33 KB, and lost on the H200: fwd+bwd 103.6 us against
          // 93.2 (bench/results/nvidia-h200-s8-tune-cln-sweep.log, "default" vs "S2").
          const long long steps =
              blocks * s2 * static_cast<long long>(stage(a)) / (16 * 1024);
          const long long score = (steps * 8 + blocks) * 64 + a;
          if (score > best) best = score, bp = a, bs = s2;
        }
      }
    }
    if (bp == 0) {  // nothing fits in 2-3 stages of the target size: the smallest ring
      if (ppr == 0) ppr = avail[0];
      if (st == 0) st = 2;
    } else {
      ppr = bp;
      if (st == 0) st = bs;
    }
    if (want_ppr == 0)
      while (ppr > avail[0] && ppr > 8 &&
             B * cdiv(L, static_cast<long long>(ppr) * V) < 2LL * sm_count())
        ppr /= 2;
  }
  if (!fits(ppr, st)) {
    if (want_ppr > 0 || want_stages > 0)  // an explicit request that cannot be met
      fail("stream_ppr " + std::to_string(ppr) + " with " + std::to_string(st) +
           " stages and C = " + std::to_string(C) + " needs more shared memory than a block has");
    return sp;
  }
  // 0: the output warps refill the stages where the TMA copies (the kernel's choice), else 1.
  const int lead = want_lead > 0 ? static_cast<int>(want_lead) : 0;
  if (lead >= st)
    fail("stream_lead " + std::to_string(lead) + " must be below the stage count " +
         std::to_string(st));
  sp.ppr = ppr;
  sp.stages = st;
  sp.lead = lead;
  sp.smem = st * stage(ppr) + fixed;
  return sp;
}

// f(std::integral_constant<int, ppr>) for a compiled PPR.
template <int... Ps, typename F>
void with_ppr(std::integer_sequence<int, Ps...>, int ppr, F&& f) {
  ((ppr == Ps ? (f(std::integral_constant<int, Ps>{}), 0) : 0), ...);
}

// Whether a launch of `grid` blocks, `per_sm` of which fit on an SM, goes as a programmatic
// dependent of the launch before it (the call's `pdl`): only a grid of at least one full
// wave.  Launched early, a dependent's blocks are placed while the launch before it still
// holds SMs, and a smaller grid may then land two blocks on one SM and none on another: the
// (80, 64, 301) seed's resident forward (80 blocks, 2 per SM fit) took 13.4 us that way,
// 9.9 plain (H200, bench/results/nvidia-h200-s27c-tune-seed27c.log).  A full grid has
// per_sm blocks on every SM wherever they land.
inline bool pdl_grid(bool pdl, long long grid, int per_sm) {
  return pdl && grid >= static_cast<long long>(per_sm) * sm_count();
}

// Launch a register-tile kernel (cln_kernels.cuh): one block of `threads` per tile, with
// `pdl` a programmatic dependent of the launch before it where the grid fills a wave.
template <typename K, typename Args>
void tile_launch(K* kernel, int threads, long long ntot, cudaStream_t st, bool pdl, Args& a,
                 const char* what) {
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), threads, 0);
  launch_ex(kernel, dim3(static_cast<unsigned>(ntot)), dim3(threads), 0, st,
            pdl_grid(pdl, ntot, per_sm), false, a, what);
}

// The grid of a streaming launch (stream_launch): every block of the plan's ring that fits
// at once (SMs x occupancy), never more blocks than tiles; the CPU emulator: 1 (below).
// The backward sizes its rows of dgamma / dbeta partials (one per block) by it.
template <typename K>
long long stream_grid(K* kernel_fn, int threads, const StreamPlan& sp, long long ntot,
                      const char* op, int* per_sm_out = nullptr) {
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel_fn), threads, sp.smem);
  if (per_sm < 1)
    throw std::runtime_error(std::string("cuda_ext: ") + op +
                             ": the streaming kernel does not fit on an SM (" +
                             std::to_string(sp.smem) + " bytes of shared memory)");
  if (per_sm_out) *per_sm_out = per_sm;
#ifdef NORMK_HOST_EMULATION
  (void)ntot;
  return 1;
#else
  const long long g = static_cast<long long>(per_sm) * sm_count();
  return g < ntot ? g : ntot;
#endif
}

// Launch a streaming kernel with the plan's ring on stream_grid's grid.
// Its blocks take the tiles blockIdx.x + k * gridDim.x and wait on each
// other's tiles, so every block must be resident at once: a cooperative
// launch guarantees that (or fails with cudaErrorCooperativeLaunchTooLarge
// instead of hanging, e.g. where MPS or another context holds part of the
// GPU).  The CPU emulator runs blocks one after another, where a block
// waiting on a later block's tile would wait forever: there one block takes
// every tile.  `pdl`: a programmatic dependent of the launch before it (launch_ex).
// Returns the grid (the backward's rows of dgamma / dbeta partials: one per block).
template <typename K, typename Args>
long long stream_launch(K* kernel_fn, int threads, const StreamPlan& sp, long long ntot,
                        cudaStream_t st, Args& a, const char* op, bool pdl) {
  a.nchunks = 1;
  a.nstages = sp.stages;
  a.lead = sp.lead;
  int per_sm = 0;
  const auto grid = static_cast<unsigned>(stream_grid(kernel_fn, threads, sp, ntot, op, &per_sm));
#ifdef NORMK_HOST_EMULATION
  NORMK_LAUNCH(kernel_fn, grid, static_cast<unsigned>(threads), sp.smem, st)(a);
#else
  launch_ex(kernel_fn, dim3(grid), dim3(threads), sp.smem, st, pdl_grid(pdl, grid, per_sm), true,
            a, (std::string(op) + " streaming kernel launch").c_str());
#endif
  return grid;
}

// Whether the plan's ring leaves room for only one block per SM (shared memory
// alone): both directions then take their wide kernels (StreamRolesWide, cln_stream.cuh).
inline bool stream_one_block(const StreamPlan& sp) {
  return kSmemPerSm / (sp.smem + kStreamStaticSmem + 1024) < 2;
}

// Launch a streaming kernel in the roles the plan calls for: the 256-thread form, or
// the 512-thread form where one block per SM is all that fits.
// Returns the grid; stream_roles_grid: the grid it will take.
template <typename K, typename Args>
long long stream_launch_roles(K* std_fn, K* wide_fn, const StreamPlan& sp, long long ntot,
                              cudaStream_t st, Args& a, const char* op, bool pdl) {
  if (stream_one_block(sp))
    return stream_launch(wide_fn, StreamRolesWide::kThreads, sp, ntot, st, a, op, pdl);
  return stream_launch(std_fn, StreamRolesStd::kThreads, sp, ntot, st, a, op, pdl);
}
template <typename K>
long long stream_roles_grid(K* std_fn, K* wide_fn, const StreamPlan& sp, long long ntot,
                            const char* op) {
  if (stream_one_block(sp)) return stream_grid(wide_fn, StreamRolesWide::kThreads, sp, ntot, op);
  return stream_grid(std_fn, StreamRolesStd::kThreads, sp, ntot, op);
}

// Whether a streaming call takes its tiles through the TMA (include/tma.cuh),
// and the box height: 0 for the cp.async path, else cbox (channel rows per
// box, cbox | C, <= 256).  want: the call's stream_tma (-1 never, 0 where it
// applies, 1 always: throws where it does not).  vec: the call's 16-byte
// condition (T % V == 0, the tensors 16-byte aligned), which also makes
// every row stride a multiple of 16 bytes, as the tensor maps need.
// stats_aligned: the backward's mean / rstd 16-byte aligned (forward: true).
template <typename T>
int stream_tma_cbox(long long C, int ppr, bool bwd, bool vec, bool stats_aligned, int64_t want,
                    const char* op) {
  if (want < 0) return 0;
  const long long nbox = cdiv(C, 256LL);
  const long long cbox = C / nbox;
  const long long row = 16LL * ppr;                                       // bytes per tile row
  const long long bt4 = static_cast<long long>(ppr) * PackInfo<T>::V * 4;  // a stats frame row
  const char* why = nullptr;
  if (sizeof(T) > 4)
    why = "float64 has no TMA path";
  else if (!vec)
    why = "T is not a multiple of 16 bytes or a tensor is not 16-byte aligned";
  else if (bwd && !stats_aligned)
    why = "mean / rstd are not 16-byte aligned";
  else if (C % nbox != 0)
    why = "C is not a multiple of its box count (boxes of at most 256 channels)";
  else if ((cbox * row) % 128 != 0 || (bwd && bt4 % 128 != 0))
    why = "a box would not start 128-byte aligned in shared memory";
  else if (!tma_supported())
    why = "the GPU or its driver has no TMA (sm_90+)";
  if (why == nullptr) return static_cast<int>(cbox);
  if (want > 0)
    throw std::runtime_error(std::string("cuda_ext: ") + op + ": stream_tma = 1 but " + why);
  return 0;
}

// The tensor maps of a (B, C, T) tensor of T (boxes of cbox rows x bt
// frames) and of a (B, T) statistic of A (boxes of bt frames x 1).
template <typename T>
void encode_btc(CUtensorMap* m, const void* p, long long B, long long C, long long L, int cbox,
                int bt, const char* what) {
  const uint64_t dims[3] = {static_cast<uint64_t>(L), static_cast<uint64_t>(C),
                            static_cast<uint64_t>(B)};
  const uint64_t strides[2] = {static_cast<uint64_t>(L) * sizeof(T),
                               static_cast<uint64_t>(C * L) * sizeof(T)};
  const uint32_t box[3] = {static_cast<uint32_t>(bt), static_cast<uint32_t>(cbox), 1u};
  tma_encode<T>(m, p, 3, dims, strides, box, what);
}
template <typename A>
void encode_bt(CUtensorMap* m, const void* p, long long B, long long L, int bt, const char* what) {
  const uint64_t dims[2] = {static_cast<uint64_t>(L), static_cast<uint64_t>(B)};
  const uint64_t strides[1] = {static_cast<uint64_t>(L) * sizeof(A)};
  const uint32_t box[2] = {static_cast<uint32_t>(bt), 1u};
  tma_encode<A>(m, p, 2, dims, strides, box, what);
}

// The resident forward (include/cln_resident.cuh): one block per sequence,
// no workspace.  Automatic up to kResidentAutoBytes of shared memory per
// block (two blocks per SM, so B > SMs still overlaps one block's copies with
// another's arithmetic); forced, up to the streaming kernels' budget.
constexpr size_t kResidentAutoBytes = 96 * 1024;
template <typename T>
bool use_resident(const ClnFwdCall& c, const char* op) {
  if (c.resident < 0) return false;
  const long long bytes = resident_smem_bytes<T>(c.C, c.L);
  if (c.resident > 0) {
    if (bytes > static_cast<long long>(kStreamSmemBudget))
      throw std::runtime_error(std::string("cuda_ext: ") + op + ": resident with C x T = " +
                               std::to_string(c.C) + " x " + std::to_string(c.L) +
                               " needs more shared memory than a block has (" +
                               std::to_string(bytes) + " bytes)");
    return true;
  }
  const bool forced = c.stream_ppr != 0 || c.stream_stages != 0 || c.stream_lead != 0;
  return !forced && bytes <= static_cast<long long>(kResidentAutoBytes);
}

// Whether a call chains its launches by programmatic dependent launch (ClnFwdCall::pdl).
template <typename Call>
bool use_pdl(const Call& c) {
  return c.pdl > 0 && pdl_supported();
}

// A call's cross-tile plan (checked_plan) and workspace (both directions): checks
// the sizes and the workspace, zeroes what needs it (on the call's stream).
// prows: the rows of dgamma / dbeta partials its launch writes (0: none).
inline Plan checked_plan(const char* op, long long B, long long C, long long L, int bt,
                         int64_t group_tiles) {
  check_sizes(op, B, C, L, bt);
  return plan(B, L, bt, group_tiles);
}
struct Setup {
  Plan p;
  Layout l;
  char* w;
};
template <typename Call>
Setup setup_call(const Call& c, const char* op, size_t acc, const Plan& p, long long prows,
                 void* ws, size_t ws_bytes, cudaStream_t st) {
  Setup s;
  s.p = p;
  s.l = layout(acc, s.p.ntot, c.B * s.p.ngroups, c.C, prows);
  if (ws_bytes < s.l.total)
    throw std::runtime_error(std::string("cuda_ext: ") + op + ": workspace too small");
  s.w = static_cast<char*>(ws);
  zero_workspace(s.w, s.l.zero_bytes, st, use_pdl(c),
                 (std::string(op) + " workspace zeroing").c_str());
  return s;
}

// The cross-tile workspace fields of a call's kernel arguments (both directions).
template <typename Args, typename A>
void set_prefix_workspace(Args& a, const Plan& p, const Layout& l, char* w) {
  a.ntiles = static_cast<int>(p.ntiles);
  a.group = static_cast<int>(p.group);
  a.ngroups = static_cast<int>(p.ngroups);
  a.ticket = reinterpret_cast<int*>(w);
  a.flags = reinterpret_cast<int*>(w + l.flags);
  a.slots = reinterpret_cast<A*>(w + l.slots);
  a.gflags = reinterpret_cast<int*>(w + l.gflags);
  a.gslots = reinterpret_cast<A*>(w + l.gslots);
}

// The two kernel families a call can take.  bt<T>(): frames per tile.
template <typename Cf>
struct RegPath {  // cln_kernels.cuh, one block per tile
  template <typename T>
  static constexpr int bt() {
    return ClnGeom<T, Cf::TPR, Cf::R>::BT;
  }
};
template <int PPR>
struct StreamPath {  // cln_stream.cuh, persistent
  StreamPlan sp;
  int64_t tma;  // the call's stream_tma
  template <typename T>
  static constexpr int bt() {
    return StreamGeom<T, PPR>::BT;
  }
};

// f(tp, path) with the call's element / parameter types (tp::T, tp::P) and
// its kernel family: the streaming plan when it has one, else the first
// configuration of Cfgs<T> whose register chunk holds C (the last one,
// chunked, beyond).
template <template <typename> class Cfgs, typename Pprs = StreamPprs, typename Call, typename F>
void with_cln_path(const Call& c, const char* op, bool bwd, F&& f) {
  dispatch_types(c.dtype, c.param_dtype, op, [&](auto tp) {
    using T = typename decltype(tp)::T;
    // Whether the call will likely take the TMA path (stream_tma_cbox decides at launch,
    // from the tile shape and the pointers' alignment too): its plan then has 3 stages.
    const bool tma_likely = c.stream_tma >= 0 && sizeof(T) <= 4 &&
                            c.L % PackInfo<T>::V == 0 && tma_supported();
    const StreamPlan sp = stream_plan<T>(Pprs{}, c.B, c.C, c.L, bwd, c.stream_ppr,
                                         c.stream_stages, c.stream_lead, tma_likely, op);
    if (sp.ppr > 0)
      with_ppr(Pprs{}, sp.ppr, [&](auto pc) { f(tp, StreamPath<decltype(pc)::value>{sp, c.stream_tma}); });
    else
      with_first_fit(typename Cfgs<T>::type{}, c.C, [&](auto cf) { f(tp, RegPath<decltype(cf)>{}); });
  });
}

// Workspace bytes of a cLN call.  prows(tp, path, ntot): the rows of dgamma / dbeta
// partials the call's launch writes (0: none).
template <template <typename> class Cfgs, typename Pprs = StreamPprs, typename Call, typename R>
size_t cln_workspace_bytes(const Call& c, const char* op, bool bwd, R&& prows) {
  size_t bytes = 0;
  with_cln_path<Cfgs, Pprs>(c, op, bwd, [&](auto tp, auto path) {
    using T = typename decltype(tp)::T;
    const int bt = decltype(path)::template bt<T>();
    const Plan p = checked_plan(op, c.B, c.C, c.L, bt, c.group_tiles);
    const long long rows = prows(tp, path, p.ntot);
    bytes = layout(sizeof(acc_t<T>), p.ntot, c.B * p.ngroups, c.C, rows).total;
  });
  return bytes;
}

}  // namespace cln_detail
}  // namespace normk
