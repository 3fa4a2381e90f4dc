// RMSNorm launch configuration tables (shared by rms_fwd.cu and
// rms_bwd.cu).
//
// Cfg<NT, TPRW, VPT, MB>: NT threads per block, TPRW threads per row (32:
// a warp per row; NT: the block per row), VPT 16-byte packs per thread held
// in registers, MB blocks per SM for __launch_bounds__ (cap 65536 / (NT*MB)
// registers: 64 in the forward, where a thread holds VPT * 4 registers of
// x; 64-128 in the backward, which also holds dy).  A row of NV packs takes
// the first entry with TPRW * VPT >= NV; longer rows loop over chunks with
// the last entry (second pass re-reads from L2).
//
//   fwd  NV <= 32 warp/row 1 pack; <= 128 warp/row 4 packs; then a block per
//        row with 4 packs per thread: 128, 256, 512, 1024 threads (NV <= 4096,
//        fp32 N <= 16384), then 1024 threads x 8 packs (N <= 32768 fp32) and
//        chunks of that beyond.  E.g. fp32 N = 4096: 256 threads x 4 x 16 B,
//        8 blocks (2048 threads) per SM, 64 KB of loads in flight per SM.
//   bwd  the same ladder with 4 packs of x and 4 of dy at most per thread.
#pragma once

#include <string>

#include "launch_util.h"
#include "rmsnorm_kernels.cuh"

namespace normk {
namespace rms_detail {


template <int NT_, int TPRW_, int VPT_, int MB_>
struct Cfg {
  static constexpr int NT = NT_, TPRW = TPRW_, VPT = VPT_, MB = MB_;
  static constexpr int RPB = NT / TPRW;
  static constexpr int CW = TPRW * VPT;
  static constexpr long long kCap = CW;
};

using FwdCfgs = CfgList<Cfg<256, 32, 1, 4>, Cfg<256, 32, 4, 4>, Cfg<128, 128, 4, 8>,
                        Cfg<256, 256, 4, 4>, Cfg<512, 512, 4, 2>, Cfg<1024, 1024, 4, 1>,
                        Cfg<1024, 1024, 8, 1>>;
template <typename T>
struct BwdCfgs {
  using type = CfgList<Cfg<256, 32, 1, 4>, Cfg<256, 32, 4, 2>, Cfg<128, 128, 4, 4>,
                       Cfg<256, 256, 4, 2>, Cfg<512, 512, 4, 2>, Cfg<1024, 1024, 4, 1>>;
};
// fp64 needs ~80 registers at 4 + 4 packs: one block of 512 per SM, and
// chunks of 2048 packs beyond (the 1024-thread entry would spill).
// The row kernel (rms_bwd_row_kernel): 16 elements per thread (VPT 2 for
// 16-bit types, 4 for fp32; the warp-per-row entries of short rows fewer).
// fp32 rows: 128 registers per thread at most (NT * MB = 512).  16-bit rows
// of 1024-8192 elements: 64 registers (NT * MB = 1024) with the dw partial
// in shared memory (rms_row_dw_smem), so that an SM has two rows of 8192 in
// flight instead of one; at 128 registers a 16-bit row of 8192 moves 32 KB
// of loads per SM per row, too few to cover DRAM latency: (16384, 8192)
// bf16 fwd+bwd 0.78 of copy bandwidth (-s5-final-rms-peers).  Rows longer
// than the last entry (N > 8192) take the general kernel.
template <typename T>
struct RowBwdCfgs {  // fp16 / bf16: N <= 256, 512, 2048, 4096, 8192
  using type = CfgList<Cfg<256, 32, 1, 2>, Cfg<256, 32, 2, 2>, Cfg<128, 128, 2, 8>,
                       Cfg<256, 256, 2, 4>, Cfg<512, 512, 2, 2>>;
};
template <>
struct RowBwdCfgs<float> {  // N <= 128, 512, 2048, 4096, 8192
  using type = CfgList<Cfg<256, 32, 1, 2>, Cfg<256, 32, 4, 2>, Cfg<128, 128, 4, 4>,
                       Cfg<256, 256, 4, 2>, Cfg<512, 512, 4, 1>>;
};
// The capacity (packs per row) of a table's last entry.
template <typename... Cs>
constexpr long long last_cap(CfgList<Cs...>) {
  constexpr long long caps[] = {Cs::kCap...};
  return caps[sizeof...(Cs) - 1];
}

template <>
struct BwdCfgs<double> {
  using type = CfgList<Cfg<256, 32, 1, 4>, Cfg<256, 32, 4, 2>, Cfg<128, 128, 4, 4>,
                       Cfg<256, 256, 4, 2>, Cfg<512, 512, 4, 1>>;
};

inline void check_sizes(const char* op, long long M, long long N, long long ldx) {
  if (M < 1 || N < 1 || M > (1LL << 31) - 1 || N > (1LL << 30) || ldx < N)
    throw std::runtime_error(std::string("cuda_ext: ") + op +
                             ": sizes out of range (need 1 <= M < 2^31, 1 <= N <= 2^30, "
                             "row stride >= N)");
}

}  // namespace rms_detail
}  // namespace normk
