// cLN forward launcher (configurations: cln_common.h).
#include <cstdlib>

#include "cln_common.h"

namespace normk {
namespace {
using namespace cln_detail;

template <typename T, typename P, typename Cf>
void launch(const RegPath<Cf>&, ClnFwdArgs<T, P>& a, long long ntot, cudaStream_t st) {
  using G = ClnGeom<T, Cf::TPR, Cf::R>;
  static_assert(Cf::kCap == G::CR, "table capacity must match the kernel geometry");
  a.nchunks = static_cast<int>(cdiv(a.C, G::CR));
  auto* kernel = &cln_fwd_kernel<T, P, Cf::TPR, Cf::R, Cf::MB>;
  NORMK_LAUNCH(kernel, static_cast<unsigned>(ntot), G::NTT, 0, st)(a);  // one block per tile
}

template <typename T, typename P, int PPR>
void launch(const StreamPath<PPR>& path, ClnFwdArgs<T, P>& a, long long ntot, cudaStream_t st) {
  // Timing diagnostic (bench/diag_cln_stream.py): NORMK_CLN_DIAG=1 leaves the cross-tile
  // wait out, 2 also the statistics; the outputs are then wrong.
  const char* diag = std::getenv("NORMK_CLN_DIAG");
  a.diag = diag ? std::atoi(diag) : 0;
  stream_launch(&cln_fwd_stream_kernel<T, P, PPR>, path.sp, ntot, st, a, "cln_forward");
}

template <typename T, typename P, typename Path>
void fwd_impl(const ClnFwdCall& c, const Path& path, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  const Setup su = setup_call(c, "cln_forward", Path::template bt<T>(), sizeof(A), false, ws,
                              ws_bytes, st);
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
  a.vec = c.L % PackInfo<T>::V == 0 && aligned16(c.x) && aligned16(c.y);
  a.eps = static_cast<A>(c.eps);
  set_prefix_workspace<decltype(a), A>(a, su.p, su.l, su.w);
  launch(path, a, su.p.ntot, st);
  check_launch("cln_forward kernel launch");
}

}  // namespace

size_t cln_fwd_workspace_bytes(const ClnFwdCall& c) {
  return cln_workspace_bytes<FwdCfgs>(c, "cln_forward", false, false);
}

void cln_fwd(const ClnFwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  with_cln_path<FwdCfgs>(c, "cln_forward", false, [&](auto tp, auto path) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    fwd_impl<T, P>(c, path, workspace, workspace_bytes, stream);
  });
}

}  // namespace normk
