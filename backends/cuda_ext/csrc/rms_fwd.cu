// RMSNorm forward launcher (configurations: rms_common.h).
#include "rms_common.h"

namespace normk {
namespace {
using namespace rms_detail;

template <typename T, typename P, typename Cf>
void fwd_impl(const RmsFwdCall& c, cudaStream_t st) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  RmsFwdArgs<T, P> a{};
  a.x = static_cast<const T*>(c.x);
  a.ldx = c.ldx;
  a.w = static_cast<const P*>(c.w);
  a.y = static_cast<T*>(c.y);
  a.rstd = static_cast<A*>(c.rstd);
  a.M = static_cast<int>(c.M);
  a.N = static_cast<int>(c.N);
  a.nchunks = static_cast<int>(cdiv(cdiv(c.N, V), Cf::CW));
  a.vec = c.N % V == 0 && (c.ldx * sizeof(T)) % 16 == 0 && aligned16(c.x) && aligned16(c.y);
  a.wvec = aligned16(c.w);
  a.eps = static_cast<A>(c.eps);
  const long long blocks = cdiv(c.M, Cf::RPB);
  auto* kernel = &rms_fwd_kernel<T, P, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB>;
  NORMK_LAUNCH(kernel, static_cast<unsigned>(blocks), Cf::NT, 0, st)(a);
  check_launch("rmsnorm_forward kernel launch");
}

}  // namespace

void rms_fwd(const RmsFwdCall& c, cudaStream_t stream) {
  check_sizes("rmsnorm_forward", c.M, c.N, c.ldx);
  dispatch_types(c.dtype, c.param_dtype, "rmsnorm_forward", [&](auto tp) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    with_first_fit(FwdCfgs{}, cdiv(c.N, PackInfo<T>::V),
             [&](auto cf) { fwd_impl<T, P, decltype(cf)>(c, stream); });
  });
}

}  // namespace normk
