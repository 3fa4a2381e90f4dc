// cLN launch configuration tables and workspace layout (shared by
// cln_fwd.cu and cln_bwd.cu).
//
// Configurations (see include/cln_kernels.cuh; 224 data threads + 1 scan
// warp per block): Cfg<TPR, R, MB> holds R channel rows per thread, TPR
// threads per row (8: 128-byte row segments; 4: 64-byte ones, used where 8
// would need more registers than fit), MB blocks per SM for
// __launch_bounds__.  A call takes the first entry whose chunk
// CR = R * 224 / TPR covers C (the tile then stays in registers); past the
// last one, the last entry loops over channel chunks.  Every entry compiles
// without spills for sm_90 (tests/test_cuda_ext_build.py checks ptxas):
//
//   fwd fp32          C <= 84, 140, 280, 532   regs 56 / 61 / 80 / 120
//   fwd fp16, bf16    C <= 84, 140, 280, 560   (V = 8: wider per-frame arrays,
//                                                so 64-byte rows past 280)
//   fwd fp64          C <= 84, 280, 560
//   bwd fp32          C <= 84, 140 (dy kept in registers), 280, 560 (dy
//                     prefetched to L1 and re-read)
//   bwd fp16, bf16    C <= 84, 140, 280 (dy kept); chunked beyond
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
template <>
struct BwdCfgs<float> {
  using type = CfgList<BCfg<8, 3, true, 3>, BCfg<8, 5, true, 2>, BCfg<8, 10, false, 2>,
                       BCfg<4, 10, false, 2>>;
};
template <>
struct BwdCfgs<double> {
  using type = CfgList<BCfg<8, 3, true, 2>, BCfg<8, 10, false, 2>, BCfg<4, 10, false, 2>>;
};

// Workspace: [ticket | flags (ntot ints) | slots (ntot x 8 acc)
//             | partials (ntot x 2C acc) | colsum scratch | 2C acc sink].
// Only the ticket and the flags need zeroing.
struct Layout {
  size_t flags, slots, partial, scratch, sink, total, zero_bytes;
};
inline Layout layout(size_t acc, long long ntot, long long C, bool partials) {
  Layout l{};
  l.flags = 256;
  l.zero_bytes = l.flags + 4 * static_cast<size_t>(ntot);
  l.slots = align_up(l.zero_bytes, 256);
  l.partial = align_up(l.slots + 8 * acc * ntot, 256);
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
      B * cdiv(L, bt) > (1LL << 31) - 1)
    throw std::runtime_error(std::string("cuda_ext: ") + op +
                             ": sizes out of range (need 1 <= C, L <= 2^30 and fewer than "
                             "2^31 tiles)");
}

}  // namespace cln_detail
}  // namespace normk
