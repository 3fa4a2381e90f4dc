// RMSNorm backward launcher (configurations: rms_common.h).
#include <algorithm>

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

template <typename T, typename P, typename Cf>
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
      reinterpret_cast<const void*>(&rms_bwd_kernel<T, P, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB>);
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
  p.grid = static_cast<int>(std::min<long long>(groups, static_cast<long long>(sm_count()) * per_sm));
  p.partial_off = 0;
  p.scratch_off = 0;
  p.total = 0;
  if (want_dw) {
    p.scratch_off = align_up(sizeof(A) * static_cast<size_t>(p.grid) * c.N, 256);
    p.total = p.scratch_off + sizeof(A) * colsum_scratch_elems(p.grid, static_cast<int>(c.N));
  }
  return p;
}

template <typename T, typename P, typename Cf>
void bwd_impl(const RmsBwdCall& c, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  const BwdPlan p = bwd_plan<T, P, Cf>(c);
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
  a.prefetch = c.ahead;
  auto* kernel = &rms_bwd_kernel<T, P, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB>;
  NORMK_LAUNCH(kernel, static_cast<unsigned>(p.grid), Cf::NT, p.smem, st)(a);
  check_launch("rmsnorm_backward kernel launch");
  if (partial)
    colsum<A>(partial, p.grid, static_cast<int>(c.N), static_cast<A*>(c.dw), nullptr,
              static_cast<int>(c.N), reinterpret_cast<A*>(w + p.scratch_off), st);
}

}  // namespace

size_t rms_bwd_workspace_bytes(const RmsBwdCall& c) {
  check_sizes("rmsnorm_backward", c.M, c.N, c.ldx);
  size_t bytes = 0;
  dispatch_types(c.dtype, c.param_dtype, "rmsnorm_backward", [&](auto tp) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    with_first_fit(typename BwdCfgs<T>::type{}, cdiv(c.N, PackInfo<T>::V),
             [&](auto cf) { bytes = bwd_plan<T, P, decltype(cf)>(c).total; });
  });
  return bytes;
}

void rms_bwd(const RmsBwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  check_sizes("rmsnorm_backward", c.M, c.N, c.ldx);
  dispatch_types(c.dtype, c.param_dtype, "rmsnorm_backward", [&](auto tp) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    with_first_fit(typename BwdCfgs<T>::type{}, cdiv(c.N, PackInfo<T>::V), [&](auto cf) {
      bwd_impl<T, P, decltype(cf)>(c, workspace, workspace_bytes, stream);
    });
  });
}

}  // namespace normk
