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

#include "cln_kernels.cuh"
#include "launch_util.h"

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
//             | partials (ntot x 2C acc) | colsum scratch | 2C acc sink].
// Only the ticket and the flags need zeroing.
struct Layout {
  size_t flags, gflags, slots, gslots, partial, scratch, sink, total, zero_bytes;
};
inline Layout layout(size_t acc, long long ntot, long long ngtot, long long C, bool partials) {
  Layout l{};
  l.flags = 256;
  l.gflags = l.flags + 4 * static_cast<size_t>(ntot);
  l.zero_bytes = l.gflags + 4 * static_cast<size_t>(ngtot);
  l.slots = align_up(l.zero_bytes, 256);
  l.gslots = align_up(l.slots + kSlotW * acc * ntot, 256);
  l.partial = align_up(l.gslots + kSlotW * acc * ngtot, 256);
  l.scratch = l.partial;
  l.sink = l.partial;
  l.total = l.partial;
  if (partials) {
    l.scratch = align_up(l.partial + 2 * acc * ntot * C, 256);
    l.sink = align_up(l.scratch + acc * colsum_scratch_elems(ntot, static_cast<int>(2 * C)), 256);
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

// f(tp, cf) with the call's element / parameter types (tp::T, tp::P) and the first
// configuration of Cfgs<T> whose register chunk holds C (the last one, chunked, beyond).
template <template <typename> class Cfgs, typename Call, typename F>
void with_cln_config(const Call& c, const char* op, F&& f) {
  dispatch_types(c.dtype, c.param_dtype, op, [&](auto tp) {
    using T = typename decltype(tp)::T;
    with_first_fit(typename Cfgs<T>::type{}, c.C, [&](auto cf) { f(tp, cf); });
  });
}

// Workspace bytes of a cLN call; `partials`: the backward's dgamma / dbeta partials.
template <template <typename> class Cfgs, typename Call>
size_t cln_workspace_bytes(const Call& c, const char* op, bool partials) {
  size_t bytes = 0;
  with_cln_config<Cfgs>(c, op, [&](auto tp, auto cf) {
    using T = typename decltype(tp)::T;
    using Cf = decltype(cf);
    const Plan p = plan(c.B, c.L, ClnGeom<T, Cf::TPR, Cf::R>::BT, c.group_tiles);
    bytes = layout(sizeof(acc_t<T>), p.ntot, c.B * p.ngroups, c.C, partials).total;
  });
  return bytes;
}

}  // namespace cln_detail
}  // namespace normk
