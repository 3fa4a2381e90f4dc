// cLN forward launcher (configurations: cln_common.h).
#include <cstdlib>

#include "cln_common.h"

namespace normk {
namespace {
using namespace cln_detail;

template <typename T, typename P, typename Cf>
void launch(const RegPath<Cf>&, ClnFwdArgs<T, P>& a, long long ntot, cudaStream_t st, bool pdl) {
  using G = ClnGeom<T, Cf::TPR, Cf::R>;
  static_assert(Cf::kCap == G::CR, "table capacity must match the kernel geometry");
  a.nchunks = static_cast<int>(cdiv(a.C, G::CR));
  auto* kernel = &cln_fwd_kernel<T, P, Cf::TPR, Cf::R, Cf::MB>;
  tile_launch(kernel, G::NTT, ntot, st, pdl, a, "cln_forward kernel launch");
}

template <typename T, typename P, int PPR>
void launch(const StreamPath<PPR>& path, ClnFwdArgs<T, P>& a, long long ntot, cudaStream_t st,
            bool pdl) {
  // Timing diagnostic (bench/diag_cln_stream.py): NORMK_CLN_DIAG=1 leaves the cross-tile
  // wait out, 2 also the statistics, 3 (4) the wait of the first (last) round's tiles only;
  // the outputs are then wrong.
  const char* diag = std::getenv("NORMK_CLN_DIAG");
  a.diag = diag ? std::atoi(diag) : 0;
  a.cbox = stream_tma_cbox<T>(a.C, PPR, false, a.vec != 0, true, path.tma, "cln_forward");
  a.tma = a.cbox > 0;
  if (a.tma) {
    constexpr int BT = StreamGeom<T, PPR>::BT;
    encode_btc<T>(&a.tm_x, a.x, a.B, a.C, a.L, a.cbox, BT, "cln_forward x");
    encode_btc<T>(&a.tm_y, a.y, a.B, a.C, a.L, a.cbox, BT, "cln_forward y");
  }
  // One block per SM: the wide kernel (twice the producer and output warps), as the
  // backward.  H200, against the 256-thread kernel, alternated twice in one call
  // (bench/gpu_s10d.sh, bench/results/nvidia-h200-s10d-*): (16, 512, 4000) fp32 83.2 ->
  // 81.4 us, bf16 53.8-54.3 -> 50.3 us; no other target shape has a one-block plan.
  stream_launch_roles(&cln_fwd_stream_kernel<T, P, PPR, StreamRolesStd>,
                      &cln_fwd_stream_kernel<T, P, PPR, StreamRolesWide>, path.sp, ntot, st, a,
                      "cln_forward", pdl);
}

// The kernel arguments every forward kernel takes from the call.
template <typename T, typename P>
ClnFwdArgs<T, P> call_args(const ClnFwdCall& c) {
  using A = acc_t<T>;
  ClnFwdArgs<T, P> a{};
  a.x = static_cast<const T*>(c.x);
  a.gamma = static_cast<const P*>(c.gamma);
  a.beta = static_cast<const P*>(c.beta);
  a.y = static_cast<T*>(c.y);
  a.mean = static_cast<A*>(c.mean);
  a.rstd = static_cast<A*>(c.rstd);
  a.m2_last = static_cast<A*>(c.m2_last);
  a.mean_last = static_cast<A*>(c.mean_last);
  a.count0 = reinterpret_cast<const long long*>(c.count0);
  a.mean0 = static_cast<const A*>(c.mean0);
  a.m20 = static_cast<const A*>(c.m20);
  a.B = static_cast<int>(c.B);
  a.C = static_cast<int>(c.C);
  a.L = static_cast<int>(c.L);
  a.eps = static_cast<A>(c.eps);
  a.shift = c.frame_shift != 0;
  return a;
}

template <typename T, typename P, typename Path>
void fwd_impl(const ClnFwdCall& c, const Path& path, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  const Plan p = checked_plan("cln_forward", c.B, c.C, c.L, Path::template bt<T>(), c.group_tiles);
  const Setup su = setup_call(c, "cln_forward", sizeof(A), p, 0, ws, ws_bytes, st);
  ClnFwdArgs<T, P> a = call_args<T, P>(c);
  a.vec = c.L % PackInfo<T>::V == 0 && aligned16(c.x) && aligned16(c.y);
  set_prefix_workspace<decltype(a), A>(a, su.p, su.l, su.w);
  a.spin = static_cast<int>(c.prefix_spin);
  launch(path, a, su.p.ntot, st, use_pdl(c));
  check_launch("cln_forward kernel launch");
}

// The resident kernel: one block per sequence, no workspace.
template <typename T, typename P>
void resident_impl(const ClnFwdCall& c, cudaStream_t st) {
  check_sizes("cln_forward", c.B, c.C, c.L, c.L);  // one "tile" per sequence
  ClnFwdArgs<T, P> a = call_args<T, P>(c);
  // 16-byte copies of the flat sequence: every batch item's slice aligned.
  a.vec = (c.C * c.L) % PackInfo<T>::V == 0 && aligned16(c.x) && aligned16(c.y);
  const size_t smem = static_cast<size_t>(resident_smem_bytes<T>(c.C, c.L));
  auto* kernel = &cln_fwd_resident_kernel<T, P>;
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), kResidentThreads, smem);
  if (per_sm < 1)
    throw std::runtime_error("cuda_ext: cln_forward: the resident kernel does not fit on an SM (" +
                             std::to_string(smem) + " bytes of shared memory)");
  // With `pdl` (and a full wave: pdl_grid) a dependent of the launch before it (no zeroing:
  // no workspace): it waits for that one before it reads anything.
  launch_ex(kernel, dim3(static_cast<unsigned>(c.B)), dim3(kResidentThreads), smem, st,
            pdl_grid(use_pdl(c), c.B, per_sm), false, a, "cln_forward resident kernel launch");
  check_launch("cln_forward resident kernel launch");
}

// Whether the call takes the resident kernel (checks a forced request).
bool resident_call(const ClnFwdCall& c) {
  bool r = false;
  dispatch_types(c.dtype, c.param_dtype, "cln_forward", [&](auto tp) {
    r = use_resident<typename decltype(tp)::T>(c, "cln_forward");
  });
  return r;
}

}  // namespace

size_t cln_fwd_workspace_bytes(const ClnFwdCall& c) {
  if (resident_call(c)) return 0;
  return cln_workspace_bytes<FwdCfgs>(c, "cln_forward", false,
                                     [](auto, const auto&, long long) { return 0LL; });
}

void cln_fwd(const ClnFwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (resident_call(c)) {
    dispatch_types(c.dtype, c.param_dtype, "cln_forward", [&](auto tp) {
      resident_impl<typename decltype(tp)::T, typename decltype(tp)::P>(c, stream);
    });
    return;
  }
  with_cln_path<FwdCfgs>(c, "cln_forward", false, [&](auto tp, auto path) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    fwd_impl<T, P>(c, path, workspace, workspace_bytes, stream);
  });
}

}  // namespace normk
