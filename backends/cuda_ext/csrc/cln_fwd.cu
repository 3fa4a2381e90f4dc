// cLN forward launcher (configurations: cln_common.h).
#include "cln_common.h"

namespace normk {
namespace {
using namespace cln_detail;

template <typename T, typename P, typename Cf>
void fwd_impl(const ClnFwdCall& c, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  using G = ClnGeom<T, Cf::TPR, Cf::R>;
  static_assert(Cf::kCap == G::CR, "table capacity must match the kernel geometry");
  check_sizes("cln_forward", c.B, c.C, c.L, G::BT);
  const Plan p = plan(c.B, c.L, G::BT, c.group_tiles);
  const Layout l = layout(sizeof(A), p.ntot, c.B * p.ngroups, c.C, false);
  if (ws_bytes < l.total) throw std::runtime_error("cuda_ext: cln_forward: workspace too small");
  char* w = static_cast<char*>(ws);
  check_cuda(cudaMemsetAsync(w, 0, l.zero_bytes, st), "cln_forward workspace memset");
  ClnFwdArgs<T, P> a{};
  a.x = static_cast<const T*>(c.x);
  a.gamma = static_cast<const P*>(c.gamma);
  a.beta = static_cast<const P*>(c.beta);
  a.y = static_cast<T*>(c.y);
  a.mean = static_cast<A*>(c.mean);
  a.rstd = static_cast<A*>(c.rstd);
  a.m2_last = static_cast<A*>(c.m2_last);
  a.count0 = reinterpret_cast<const long long*>(c.count0);
  a.mean0 = static_cast<const A*>(c.mean0);
  a.m20 = static_cast<const A*>(c.m20);
  a.B = static_cast<int>(c.B);
  a.C = static_cast<int>(c.C);
  a.L = static_cast<int>(c.L);
  a.ntiles = static_cast<int>(p.ntiles);
  a.nchunks = static_cast<int>(cdiv(c.C, G::CR));
  a.vec = c.L % G::V == 0 && aligned16(c.x) && aligned16(c.y);
  a.eps = static_cast<A>(c.eps);
  a.group = static_cast<int>(p.group);
  a.ngroups = static_cast<int>(p.ngroups);
  a.ticket = reinterpret_cast<int*>(w);
  a.flags = reinterpret_cast<int*>(w + l.flags);
  a.slots = reinterpret_cast<A*>(w + l.slots);
  a.gflags = reinterpret_cast<int*>(w + l.gflags);
  a.gslots = reinterpret_cast<A*>(w + l.gslots);
  auto* kernel = &cln_fwd_kernel<T, P, Cf::TPR, Cf::R, Cf::MB>;
  const unsigned grid = static_cast<unsigned>(p.ntot);  // one block per tile
  NORMK_LAUNCH(kernel, grid, G::NTT, 0, st)(a);
  check_launch("cln_forward kernel launch");
}

}  // namespace

size_t cln_fwd_workspace_bytes(const ClnFwdCall& c) {
  return cln_workspace_bytes<FwdCfgs>(c, "cln_forward", false);
}

void cln_fwd(const ClnFwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  with_cln_config<FwdCfgs>(c, "cln_forward", [&](auto tp, auto cf) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    fwd_impl<T, P, decltype(cf)>(c, workspace, workspace_bytes, stream);
  });
}

}  // namespace normk
