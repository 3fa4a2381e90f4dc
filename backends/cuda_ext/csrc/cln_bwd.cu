// cLN backward launcher (configurations: cln_common.h).
#include "cln_common.h"

namespace normk {
namespace {
using namespace cln_detail;

// The kernels of each path, and the rows of dgamma / dbeta partials each launch writes: one
// per tile (register tiles) or per block (streaming: its grid, known before the launch, so
// that the workspace holds those rows and no more; at (16, 512, 4000) fp32 a row per tile
// there took 4,000 rows of 4 KB, 16 MB, where the grid takes at most 3 x SMs rows).
template <typename T, typename P, typename Cf>
long long partial_rows(const RegPath<Cf>&, long long ntot) {
  return ntot;
}
template <typename T, typename P, int PPR>
struct StreamKernels {
  static constexpr auto std_fn = &cln_bwd_stream_kernel<T, P, PPR, StreamRolesStd>;
  static constexpr auto wide_fn = &cln_bwd_stream_kernel<T, P, PPR, StreamRolesWide>;
};
template <typename T, typename P, int PPR>
long long partial_rows(const StreamPath<PPR>& path, long long ntot) {
  using K = StreamKernels<T, P, PPR>;
  return stream_roles_grid(K::std_fn, K::wide_fn, path.sp, ntot, "cln_backward");
}

template <typename T, typename P, typename Cf>
long long launch(const RegPath<Cf>&, ClnBwdArgs<T, P>& a, long long ntot, cudaStream_t st,
                 bool pdl) {
  using G = ClnGeom<T, Cf::TPR, Cf::R>;
  static_assert(Cf::kCap == G::CR, "table capacity must match the kernel geometry");
  a.nchunks = static_cast<int>(cdiv(a.C, G::CR));
  auto* kernel = &cln_bwd_kernel<T, P, Cf::TPR, Cf::R, Cf::KEEP, Cf::MB>;
  tile_launch(kernel, G::NTT, ntot, st, pdl, a, "cln_backward kernel launch");
  return ntot;
}

template <typename T, typename P, int PPR>
long long launch(const StreamPath<PPR>& path, ClnBwdArgs<T, P>& a, long long ntot,
                 cudaStream_t st, bool pdl) {
  using A = acc_t<T>;
  using K = StreamKernels<T, P, PPR>;
  const bool stats16 = aligned16(a.mean) && aligned16(a.rstd);
  a.cbox = stream_tma_cbox<T>(a.C, PPR, true, a.vec != 0, stats16, path.tma, "cln_backward");
  a.tma = a.cbox > 0;
  if (a.tma) {
    constexpr int BT = StreamGeom<T, PPR>::BT;
    encode_btc<T>(&a.tm_x, a.x, a.B, a.C, a.L, a.cbox, BT, "cln_backward x");
    encode_btc<T>(&a.tm_dy, a.dy, a.B, a.C, a.L, a.cbox, BT, "cln_backward dy");
    encode_btc<T>(&a.tm_dx, a.dx, a.B, a.C, a.L, a.cbox, BT, "cln_backward dx");
    encode_bt<A>(&a.tm_mean, a.mean, a.B, a.L, BT, "cln_backward mean");
    encode_bt<A>(&a.tm_rstd, a.rstd, a.B, a.L, BT, "cln_backward rstd");
  }
  // One block per SM: the wide kernel (twice the producer and output warps).  H200,
  // fwd+bwd against the 256-thread kernel, alternated twice in one call (bench/gpu_s10c.sh,
  // bench/results/nvidia-h200-s10c-*): (16, 512, 4000) fp32 253 -> 238 us, bf16 149 ->
  // 140 us; (4, 256, 16000) fp32 128 -> 121 us, bf16 90 -> 85-86 us; the shapes whose
  // plans have 2-3 blocks per SM take the 256-thread kernel and did not change.
  return stream_launch_roles(K::std_fn, K::wide_fn, path.sp, ntot, st, a, "cln_backward", pdl);
}

template <typename T, typename P, typename Path>
void bwd_impl(const ClnBwdCall& c, const Path& path, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  const bool partials = c.dgamma != nullptr || c.dbeta != nullptr;
  const Plan p = checked_plan("cln_backward", c.B, c.C, c.L, Path::template bt<T>(), c.group_tiles);
  const long long prows = partials ? partial_rows<T, P>(path, p.ntot) : 0;
  const Setup su = setup_call(c, "cln_backward", sizeof(A), p, prows, ws, ws_bytes, st);
  const long long ntot = su.p.ntot;
  const Layout& l = su.l;
  char* const w = su.w;
  ClnBwdArgs<T, P> a{};
  a.dy = static_cast<const T*>(c.dy);
  a.x = static_cast<const T*>(c.x);
  a.gamma = static_cast<const P*>(c.gamma);
  a.mean = static_cast<const A*>(c.mean);
  a.rstd = static_cast<const A*>(c.rstd);
  a.count = reinterpret_cast<const long long*>(c.count);
  a.dx = static_cast<T*>(c.dx);
  a.partial = partials ? reinterpret_cast<A*>(w + l.partial) : nullptr;
  a.B = static_cast<int>(c.B);
  a.C = static_cast<int>(c.C);
  a.L = static_cast<int>(c.L);
  a.vec = c.L % PackInfo<T>::V == 0 && aligned16(c.x) && aligned16(c.dy) && aligned16(c.dx);
  set_prefix_workspace<decltype(a), A>(a, su.p, l, w);
  a.spin = static_cast<int>(c.prefix_spin);
  const bool pdl = use_pdl(c);
  const long long rows = launch(path, a, ntot, st, pdl);
  check_launch("cln_backward kernel launch");
  if (partials && rows != prows)  // both from the same (cached) occupancy query
    throw std::runtime_error("cuda_ext: cln_backward: internal error: the launch wrote " +
                             std::to_string(rows) + " rows of partials, the workspace holds " +
                             std::to_string(prows));
  if (partials) {
    // dgamma = sum over the rows (tiles or blocks) of partial[:, 0, :], dbeta of partial[:, 1, :].
    A* sink = reinterpret_cast<A*>(w + l.sink);
    A* dg = c.dgamma ? static_cast<A*>(c.dgamma) : sink;
    A* db = c.dbeta ? static_cast<A*>(c.dbeta) : sink + c.C;
    colsum<A>(a.partial, rows, static_cast<int>(2 * c.C), dg, db, static_cast<int>(c.C),
              reinterpret_cast<A*>(w + l.scratch), st, pdl);
  }
}

}  // namespace

size_t cln_bwd_workspace_bytes(const ClnBwdCall& c) {
  const bool partials = c.dgamma != nullptr || c.dbeta != nullptr;
  return cln_workspace_bytes<BwdCfgs>(c, "cln_backward", true,
                                      [&](auto tp, const auto& path, long long ntot) {
                                        using T = typename decltype(tp)::T;
                                        using P = typename decltype(tp)::P;
                                        return partials ? partial_rows<T, P>(path, ntot) : 0LL;
                                      });
}

void cln_bwd(const ClnBwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  with_cln_path<BwdCfgs>(c, "cln_backward", true, [&](auto tp, auto path) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    bwd_impl<T, P>(c, path, workspace, workspace_bytes, stream);
  });
}

}  // namespace normk
