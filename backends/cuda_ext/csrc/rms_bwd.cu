// RMSNorm backward launcher (configurations: rms_common.h).
#include <algorithm>
#include <type_traits>

#include "rms_common.h"

namespace normk {
namespace {
using namespace rms_detail;

constexpr size_t kSmemDefault = 48 * 1024;
constexpr size_t kSmemMax = 96 * 1024;  // opt-in; an H200 SM has 228 KB

// Backward plan: grid size and where dw accumulates.
struct BwdPlan {
  int grid;
  int nchunks;
  bool dw_smem;
  size_t smem;
  size_t partial_off, scratch_off, total;
};

template <typename T, typename P, typename Cf, int MODE>
BwdPlan bwd_plan(const RmsBwdCall& c) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  BwdPlan p{};
  const long long nv = cdiv(c.N, V);
  p.nchunks = static_cast<int>(cdiv(nv, Cf::CW));
  const bool want_dw = c.dw != nullptr;
  const size_t smem = static_cast<size_t>(Cf::RPB) * Cf::VPT * V * Cf::TPRW * sizeof(A);
  p.dw_smem = want_dw && p.nchunks == 1 && smem <= kSmemMax;
  if (want_dw && !p.dw_smem && Cf::RPB != 1)
    throw std::runtime_error("cuda_ext: rmsnorm_backward: internal error (dw mode)");
  p.smem = p.dw_smem ? smem : 0;
  const void* kernel =
      reinterpret_cast<const void*>(&rms_bwd_kernel<T, P, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB, MODE>);
  // Opt in to more than 48 KB of dynamic shared memory (before the
  // occupancy query, which otherwise reports 0 blocks).
  if (p.smem > kSmemDefault)
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(p.smem)),
               "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  // One full wave of persistent blocks.
  int per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Cf::NT, p.smem),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  per_sm = std::max(per_sm, 1);
  const long long groups = cdiv(c.M, Cf::RPB);
  long long grid = std::min<long long>(groups, static_cast<long long>(sm_count()) * per_sm);
  if (c.min_rows > 1) grid = std::min<long long>(grid, cdiv(groups, c.min_rows));
  p.grid = static_cast<int>(grid);
  p.partial_off = 0;
  p.scratch_off = 0;
  p.total = 0;
  if (want_dw) {
    p.scratch_off = align_up(sizeof(A) * static_cast<size_t>(p.grid) * c.N, 256);
    p.total = p.scratch_off + sizeof(A) * colsum_scratch_elems(p.grid, static_cast<int>(c.N));
  }
  return p;
}

template <typename T, typename P, typename Cf, int MODE>
void bwd_impl(const RmsBwdCall& c, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  const BwdPlan p = bwd_plan<T, P, Cf, MODE>(c);
  if (ws_bytes < p.total)
    throw std::runtime_error("cuda_ext: rmsnorm_backward: workspace too small");
  char* w = static_cast<char*>(ws);
  A* partial = c.dw ? reinterpret_cast<A*>(w + p.partial_off) : nullptr;
  if (partial && !p.dw_smem)
    check_cuda(cudaMemsetAsync(partial, 0, sizeof(A) * static_cast<size_t>(p.grid) * c.N, st),
               "rmsnorm_backward partial memset");
  RmsBwdArgs<T, P> a{};
  a.dy = static_cast<const T*>(c.dy);
  a.x = static_cast<const T*>(c.x);
  a.ldx = c.ldx;
  a.w = static_cast<const P*>(c.w);
  a.rstd = static_cast<const A*>(c.rstd);
  a.dx = static_cast<T*>(c.dx);
  a.partial = partial;
  a.M = static_cast<int>(c.M);
  a.N = static_cast<int>(c.N);
  a.nchunks = p.nchunks;
  a.vec = c.N % V == 0 && (c.ldx * sizeof(T)) % 16 == 0 && aligned16(c.x) && aligned16(c.dy) &&
          aligned16(c.dx);
  a.wvec = aligned16(c.w);
  a.dw_smem = p.dw_smem;
  auto* kernel = &rms_bwd_kernel<T, P, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB, MODE>;
  NORMK_LAUNCH(kernel, static_cast<unsigned>(p.grid), Cf::NT, p.smem, st)(a);
  check_launch("rmsnorm_backward kernel launch");
  if (partial)
    colsum<A>(partial, p.grid, static_cast<int>(c.N), static_cast<A*>(c.dw), nullptr,
              static_cast<int>(c.N), reinterpret_cast<A*>(w + p.scratch_off), st);
}

// f(std::integral_constant<int, MODE>) with the schedule of the call: the
// requested bits (c.ahead, c.dwreg) where the configuration's registers hold
// them, else dw in registers alone, else ahead alone, else neither.  Rows
// read in chunks take the plain kernel (both schedules need the whole row
// in registers).
template <typename T, typename Cf, typename F>
void with_mode(const RmsBwdCall& c, F&& f) {
  constexpr int V = PackInfo<T>::V;
  const bool once = cdiv(cdiv(c.N, V), Cf::CW) == 1;
  const int want = once ? (c.ahead ? kBwdAhead : 0) | (c.dwreg ? kBwdDwReg : 0) : 0;
  constexpr bool f3 = rms_bwd_mode_fits<T, Cf::NT, Cf::VPT, Cf::MB, 3>();
  constexpr bool f2 = rms_bwd_mode_fits<T, Cf::NT, Cf::VPT, Cf::MB, 2>();
  constexpr bool f1 = rms_bwd_mode_fits<T, Cf::NT, Cf::VPT, Cf::MB, 1>();
  if constexpr (f3) {
    if (want == 3) return f(std::integral_constant<int, 3>{});
  }
  if constexpr (f2) {
    if (want & kBwdDwReg) return f(std::integral_constant<int, 2>{});
  }
  if constexpr (f1) {
    if (want & kBwdAhead) return f(std::integral_constant<int, 1>{});
  }
  f(std::integral_constant<int, 0>{});
}

}  // namespace

size_t rms_bwd_workspace_bytes(const RmsBwdCall& c) {
  check_sizes("rmsnorm_backward", c.M, c.N, c.ldx);
  size_t bytes = 0;
  dispatch_types(c.dtype, c.param_dtype, "rmsnorm_backward", [&](auto tp) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    with_first_fit(typename BwdCfgs<T>::type{}, cdiv(c.N, PackInfo<T>::V), [&](auto cf) {
      using Cf = decltype(cf);
      with_mode<T, Cf>(c, [&](auto m) { bytes = bwd_plan<T, P, Cf, decltype(m)::value>(c).total; });
    });
  });
  return bytes;
}

void rms_bwd(const RmsBwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  check_sizes("rmsnorm_backward", c.M, c.N, c.ldx);
  dispatch_types(c.dtype, c.param_dtype, "rmsnorm_backward", [&](auto tp) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    with_first_fit(typename BwdCfgs<T>::type{}, cdiv(c.N, PackInfo<T>::V), [&](auto cf) {
      using Cf = decltype(cf);
      with_mode<T, Cf>(c, [&](auto m) {
        bwd_impl<T, P, Cf, decltype(m)::value>(c, workspace, workspace_bytes, stream);
      });
    });
  });
}

}  // namespace normk
