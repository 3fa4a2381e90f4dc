// RMSNorm backward launcher (configurations: rms_common.h).
#include <algorithm>
#include <string>
#include <type_traits>

#include "rms_common.h"

namespace normk {
namespace {
using namespace rms_detail;

constexpr size_t kSmemMax = 96 * 1024;  // opt-in; an H200 SM has 228 KB

// One wave of persistent blocks over the row groups (blocks per SM x SMs, at
// most the groups), and the workspace of their dw partials: (grid, N) A's at
// offset 0, then the column sum's scratch.  Both backward kernels.
struct Wave {
  int grid;
  size_t scratch_off, total;
};
template <typename A>
Wave wave(const RmsBwdCall& c, int per_sm, int rpb) {
  Wave v{};
  const long long groups = cdiv(c.M, rpb);
  v.grid = static_cast<int>(std::min<long long>(groups, static_cast<long long>(sm_count()) * per_sm));
  if (c.dw) {
    v.scratch_off = align_up(sizeof(A) * static_cast<size_t>(v.grid) * c.N, 256);
    v.total = v.scratch_off + sizeof(A) * colsum_scratch_elems(v.grid, static_cast<int>(c.N));
  }
  return v;
}

// dw = the column sums of the wave's partials (at the workspace's start), in
// a fixed order.
template <typename A>
void sum_partials(const RmsBwdCall& c, const Wave& v, char* w, cudaStream_t st) {
  colsum<A>(reinterpret_cast<const A*>(w), v.grid, static_cast<int>(c.N), static_cast<A*>(c.dw),
            nullptr, static_cast<int>(c.N), reinterpret_cast<A*>(w + v.scratch_off), st);
}

// Plan of the general kernel: its wave and where dw accumulates.
struct BwdPlan {
  Wave v;
  int nchunks;
  bool dw_smem;
  size_t smem;
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
  p.v = wave<A>(c, std::max(blocks_per_sm(kernel, Cf::NT, p.smem), 1), Cf::RPB);
  return p;
}

// The kernel arguments both backward kernels take from the call.
template <typename T, typename P>
RmsBwdArgs<T, P> call_args(const RmsBwdCall& c, acc_t<T>* partial) {
  RmsBwdArgs<T, P> a{};
  a.dy = static_cast<const T*>(c.dy);
  a.x = static_cast<const T*>(c.x);
  a.ldx = c.ldx;
  a.w = static_cast<const P*>(c.w);
  a.rstd = static_cast<const acc_t<T>*>(c.rstd);
  a.dx = static_cast<T*>(c.dx);
  a.partial = partial;
  a.M = static_cast<int>(c.M);
  a.N = static_cast<int>(c.N);
  a.wvec = aligned16(c.w);
  return a;
}

template <typename T, typename P, typename Cf>
void bwd_impl(const RmsBwdCall& c, void* ws, size_t ws_bytes, cudaStream_t st) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  const BwdPlan p = bwd_plan<T, P, Cf>(c);
  if (ws_bytes < p.v.total)
    throw std::runtime_error("cuda_ext: rmsnorm_backward: workspace too small");
  char* w = static_cast<char*>(ws);
  A* partial = c.dw ? reinterpret_cast<A*>(w) : nullptr;
  if (partial && !p.dw_smem)
    check_cuda(cudaMemsetAsync(partial, 0, sizeof(A) * static_cast<size_t>(p.v.grid) * c.N, st),
               "rmsnorm_backward partial memset");
  RmsBwdArgs<T, P> a = call_args<T, P>(c, partial);
  a.nchunks = p.nchunks;
  a.vec = c.N % V == 0 && (c.ldx * sizeof(T)) % 16 == 0 && aligned16(c.x) && aligned16(c.dy) &&
          aligned16(c.dx);
  a.dw_smem = p.dw_smem;
  auto* kernel = &rms_bwd_kernel<T, P, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB>;
  NORMK_LAUNCH(kernel, static_cast<unsigned>(p.v.grid), Cf::NT, p.smem, st)(a);
  check_launch("rmsnorm_backward kernel launch");
  if (partial) sum_partials<A>(c, p.v, w, st);
}

// ---------------------------------------------------------------------------
// The row kernel (rms_bwd_row_kernel).
// ---------------------------------------------------------------------------
constexpr int kRowMaxStages = 3;

// Whether the call takes the row kernel: 16-bit or fp32, whole rows in one
// pass of the table's last entry, 16-byte access legal everywhere, and not
// switched off.  A forced ring depth that cannot be honoured throws.
template <typename T>
bool use_row_kernel(const RmsBwdCall& c) {
  constexpr int V = PackInfo<T>::V;
  if (c.row_stages < 0) return false;
  const bool ok = sizeof(acc_t<T>) == 4 &&
                  cdiv(c.N, V) <= last_cap(typename RowBwdCfgs<T>::type{}) && c.N % V == 0 &&
                  (c.ldx * sizeof(T)) % 16 == 0 && aligned16(c.x) && aligned16(c.dy) &&
                  aligned16(c.dx);
  if (c.row_stages > 0 && (!ok || c.row_stages > kRowMaxStages))
    throw std::runtime_error(
        "cuda_ext: rmsnorm_backward: row_stages " + std::to_string(c.row_stages) +
        (ok ? " is above " + std::to_string(kRowMaxStages)
            : " needs fp32 / fp16 / bf16 rows of at most 8192 elements, a multiple of 16 "
              "bytes, 16-byte aligned"));
  return ok;
}

template <typename T, typename P, typename Cf, int S>
const void* row_kernel_ptr() {
  return reinterpret_cast<const void*>(&rms_bwd_row_kernel<T, P, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB, S>);
}

// Blocks per SM of the row kernel with S stages (opting in to its shared memory).
template <typename T, typename P, typename Cf, int S>
int row_blocks_per_sm() {
  const size_t smem = rms_bwd_row_smem<T, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB, S>();
  return blocks_per_sm(row_kernel_ptr<T, P, Cf, S>(), Cf::NT, smem);
}

// f(std::integral_constant<int, S>{}, blocks per SM): the forced depth, or
// automatically no ring.  The ring was slower on every shape measured on the
// H200 (bench/results/nvidia-h200-s6b-tune-rmsnorm-row.log, fwd+bwd fraction
// of copy bandwidth, S = 1 / 2 / 3): (16384, 8192) fp32 0.91 / 0.74 / 0.73,
// bf16 0.86 / 0.71 / 0.71; (32768, 4096) fp32 0.89 / 0.73 / 0.73, bf16
// 0.89 / 0.72 / 0.71; (2048, 4096) bf16 36.0 / 41.0 / 40.8 us.  ncu of S2
// (-s6-ncu-rms-row-S2.txt, before the rstd copy became one per warp, which
// changed nothing measurable): L2 at 85 % of its peak with a 69 % hit rate
// against 38 % for S1, DRAM 54 % against 71 %, 5-way bank conflicts on a
// third of the shared stores.  Triton's pipelined loop, also cp.async into
// shared memory, gains from 3 stages (bench/results/NOTES.md section 6.5);
// what this ring does differently is not understood.
template <typename T, typename P, typename Cf, typename F>
void with_row_stages(const RmsBwdCall& c, F&& f) {
  using S1 = std::integral_constant<int, 1>;
  using S2 = std::integral_constant<int, 2>;
  using S3 = std::integral_constant<int, 3>;
  const auto run = [&](auto s) {
    const int per_sm = row_blocks_per_sm<T, P, Cf, decltype(s)::value>();
    if (per_sm < 1)
      throw std::runtime_error("cuda_ext: rmsnorm_backward: row kernel with " +
                               std::to_string(decltype(s)::value) +
                               " stages does not fit on an SM");
    f(s, per_sm);
  };
  if (c.row_stages == 1) return run(S1{});
  if (c.row_stages == 2) return run(S2{});
  if (c.row_stages == 3) return run(S3{});
  run(S1{});
}

// f(Cf, S, blocks per SM) for a call that takes the row kernel.
template <typename T, typename P, typename F>
void with_row_config(const RmsBwdCall& c, F&& f) {
  with_first_fit(typename RowBwdCfgs<T>::type{}, cdiv(c.N, PackInfo<T>::V), [&](auto cf) {
    with_row_stages<T, P, decltype(cf)>(c, [&](auto s, int per_sm) { f(cf, s, per_sm); });
  });
}

template <typename T, typename P, typename Cf, int S>
void row_impl(const RmsBwdCall& c, int per_sm, void* ws, size_t ws_bytes, cudaStream_t st) {
  const Wave v = wave<float>(c, per_sm, Cf::RPB);
  if (ws_bytes < v.total)
    throw std::runtime_error("cuda_ext: rmsnorm_backward: workspace too small");
  char* w = static_cast<char*>(ws);
  float* partial = c.dw ? reinterpret_cast<float*>(w) : nullptr;
  RmsBwdArgs<T, P> a = call_args<T, P>(c, partial);
  a.nchunks = 1;
  a.vec = 1;
  const size_t smem = rms_bwd_row_smem<T, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB, S>();
  auto* kernel = &rms_bwd_row_kernel<T, P, Cf::NT, Cf::TPRW, Cf::VPT, Cf::MB, S>;
  NORMK_LAUNCH(kernel, static_cast<unsigned>(v.grid), Cf::NT, smem, st)(a);
  check_launch("rmsnorm_backward row kernel launch");
  if (partial) sum_partials<float>(c, v, w, st);
}

}  // namespace

size_t rms_bwd_workspace_bytes(const RmsBwdCall& c) {
  check_sizes("rmsnorm_backward", c.M, c.N, c.ldx);
  size_t bytes = 0;
  dispatch_types(c.dtype, c.param_dtype, "rmsnorm_backward", [&](auto tp) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    if constexpr (sizeof(acc_t<T>) == 4) {
      if (use_row_kernel<T>(c)) {
        with_row_config<T, P>(c, [&](auto cf, auto, int per_sm) {
          bytes = wave<float>(c, per_sm, decltype(cf)::RPB).total;
        });
        return;
      }
    }
    with_first_fit(typename BwdCfgs<T>::type{}, cdiv(c.N, PackInfo<T>::V),
             [&](auto cf) { bytes = bwd_plan<T, P, decltype(cf)>(c).v.total; });
  });
  return bytes;
}

void rms_bwd(const RmsBwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  check_sizes("rmsnorm_backward", c.M, c.N, c.ldx);
  dispatch_types(c.dtype, c.param_dtype, "rmsnorm_backward", [&](auto tp) {
    using T = typename decltype(tp)::T;
    using P = typename decltype(tp)::P;
    if constexpr (sizeof(acc_t<T>) == 4) {
      if (use_row_kernel<T>(c)) {
        with_row_config<T, P>(c, [&](auto cf, auto s, int per_sm) {
          row_impl<T, P, decltype(cf), decltype(s)::value>(c, per_sm, workspace, workspace_bytes,
                                                             stream);
        });
        return;
      }
    }
    with_first_fit(typename BwdCfgs<T>::type{}, cdiv(c.N, PackInfo<T>::V), [&](auto cf) {
      bwd_impl<T, P, decltype(cf)>(c, workspace, workspace_bytes, stream);
    });
  });
}

}  // namespace normk
