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
  a.count0 = reinterpret_cast<const long long*>(c.count0);
  a.mean0 = static_cast<const A*>(c.mean0);
  a.m20 = static_cast<const A*>(c.m20);
  a.B = static_cast<int>(c.B);
  a.C = static_cast<int>(c.C);
  a.L = static_cast<int>(c.L);
  a.eps = static_cast<A>(c.eps);
  return a;
}

template <typename T, typename P, typename Path>
void fwd_impl(const ClnFwdCall& c, const Path& path, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  const Setup su = setup_call(c, "cln_forward", Path::template bt<T>(), sizeof(A), false, ws,
                              ws_bytes, st);
  ClnFwdArgs<T, P> a = call_args<T, P>(c);
  a.vec = c.L % PackInfo<T>::V == 0 && aligned16(c.x) && aligned16(c.y);
  set_prefix_workspace<decltype(a), A>(a, su.p, su.l, su.w);
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
  if (c.warp_tiles == 2) return false;  // the warp-tile kernel forced
  bool r = false;
  dispatch_types(c.dtype, c.param_dtype, "cln_forward", [&](auto tp) {
    r = use_resident<typename decltype(tp)::T>(c, "cln_forward");
  });
  return r;
}

// The warp-tile forward (include/cln_warp.cuh).  WCfg<TL, R, NWC, NWT, MB>: TL time lanes
// per warp, R packs per thread, NWC warps along the channels x NWT along time, MB blocks per
// SM for __launch_bounds__ (the register cap 65536 / (32 NWC NWT MB)).  A call takes the
// first entry whose C capacity R * 32 / TL * NWC covers C.  Every entry keeps 16 packs per
// thread (64 fp32 or 128 16-bit values, as the Triton forward's tiles) and TL = 8: each load
// instruction reads 4 channel rows x 128 contiguous bytes.  Session 36's first version laid
// all warps along time (NWC = 1, TL = 32 / CL for C channels: 8 rows x 64 bytes per load at
// C = 128, 32 rows x 16 bytes at C = 512) and ran 0.27-0.53 of copy bandwidth forward on the
// H200 against the streaming kernels' 0.45-0.78 (bench/results/nvidia-h200-s36a-*,
// -s36b-*).
template <int TL_, int R_, int NWC_, int NWT_, int MB_>
struct WCfg {
  static constexpr int TL = TL_, R = R_, NWC = NWC_, NWT = NWT_, MB = MB_;
  static constexpr long long kCap = static_cast<long long>(R_) * (32 / TL_) * NWC_;
};
template <typename T>
struct WarpCfgs {  // fp16 / bf16: C <= 64 (128 frames), 128, 256, 512 (64 frames)
  // C <= 512: one block of 8 warps per SM (MB = 1); two would cap the registers at 128,
  // where ptxas spills 24-40 bytes.
  using type = CfgList<WCfg<8, 16, 1, 2, 6>, WCfg<8, 16, 2, 1, 6>, WCfg<8, 16, 4, 1, 3>,
                       WCfg<8, 16, 8, 1, 1>>;
};
template <>
struct WarpCfgs<float> {  // C <= 64, 128 (64 frames), 256, 512 (32 frames)
  using type = CfgList<WCfg<8, 16, 1, 2, 6>, WCfg<8, 16, 2, 2, 4>, WCfg<8, 16, 4, 1, 4>,
                       WCfg<8, 16, 8, 1, 2>>;
};
constexpr long long kWarpMaxC = 512;  // the last entry's capacity (both tables)

// Whether the call takes the warp-tile kernel (checks a forced request).
bool warp_call(const ClnFwdCall& c) {
  if (c.warp_tiles <= 0) return false;
  const char* why = nullptr;
  if (c.dtype == DType::kF64)
    why = "float64 has no warp-tile kernel";
  else if (c.C > kWarpMaxC)
    why = "C is above the warp-tile kernel's 512 channels";
  else if (c.C * c.L >= (1LL << 31))
    why = "C * T reaches 2^31 (the warp-tile kernel's offsets are 32-bit)";
  if (why == nullptr) return c.warp_tiles == 2 || !resident_call(c);
  if (c.warp_tiles == 2)
    throw std::runtime_error(std::string("cuda_ext: cln_forward: warp_tiles = 2 but ") + why);
  return false;
}

// f(tp, WCfg) for a warp-tile call.
template <typename F>
void with_warp_cfg(const ClnFwdCall& c, F&& f) {
  dispatch_types(c.dtype, c.param_dtype, "cln_forward", [&](auto tp) {
    using T = typename decltype(tp)::T;
    if constexpr (sizeof(T) <= 4)
      with_first_fit(typename WarpCfgs<T>::type{}, c.C, [&](auto wc) { f(tp, wc); });
  });
}

template <typename T, typename Wc>
constexpr int warp_bt() {
  return WarpGeom<T, Wc::TL, Wc::R, Wc::NWC, Wc::NWT>::BT;
}

template <typename T, typename P, typename Wc>
void warp_impl(const ClnFwdCall& c, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  using G = WarpGeom<T, Wc::TL, Wc::R, Wc::NWC, Wc::NWT>;
  const Setup su =
      setup_call(c, "cln_forward", G::BT, sizeof(A), false, ws, ws_bytes, st);
  ClnFwdArgs<T, P> a = call_args<T, P>(c);
  a.vec = c.L % PackInfo<T>::V == 0 && aligned16(c.x) && aligned16(c.y);
  set_prefix_workspace<decltype(a), A>(a, su.p, su.l, su.w);
  a.nchunks = 1;
  const char* diag = std::getenv("NORMK_CLN_DIAG");  // timing only (cln_warp.cuh)
  a.diag = diag ? std::atoi(diag) : 0;
  auto* kernel = &cln_fwd_warp_kernel<T, P, Wc::TL, Wc::R, Wc::NWC, Wc::NWT, Wc::MB>;
  // The first wave's stagger, where the grid has two waves or more (a single wave has no
  // convoy to break; Triton's CLN_STAGGER_MIN_WAVES).
  const long long wave =
      static_cast<long long>(blocks_per_sm(reinterpret_cast<const void*>(kernel), G::NT, 0)) *
      sm_count();
  if (c.warp_stagger_ns > 0 && wave > 0 && su.p.ntot >= 2 * wave) {
    a.stagger_ns = static_cast<int>(c.warp_stagger_ns);
    a.stagger_w = static_cast<int>(wave);
  }
  tile_launch(kernel, G::NT, su.p.ntot, st, use_pdl(c), a, "cln_forward warp-tile kernel launch");
  check_launch("cln_forward warp-tile kernel launch");
}

}  // namespace

size_t cln_fwd_workspace_bytes(const ClnFwdCall& c) {
  if (warp_call(c)) {
    size_t bytes = 0;
    with_warp_cfg(c, [&](auto tp, auto wc) {
      using T = typename decltype(tp)::T;
      const Plan p = plan(c.B, c.L, warp_bt<T, decltype(wc)>(), c.group_tiles);
      bytes = layout(sizeof(acc_t<T>), p.ntot, c.B * p.ngroups, c.C, false).total;
    });
    return bytes;
  }
  if (resident_call(c)) return 0;
  return cln_workspace_bytes<FwdCfgs>(c, "cln_forward", false, false);
}

void cln_fwd(const ClnFwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (warp_call(c)) {
    with_warp_cfg(c, [&](auto tp, auto wc) {
      warp_impl<typename decltype(tp)::T, typename decltype(tp)::P, decltype(wc)>(
          c, workspace, workspace_bytes, stream);
    });
    return;
  }
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
