// Host helpers shared by the launchers (no torch).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "launchers.h"

namespace normk {

[[noreturn]] inline void throw_cuda(const char* what, cudaError_t e) {
  throw std::runtime_error(std::string("cuda_ext: ") + what + " failed: " + cudaGetErrorName(e) +
                           " (" + cudaGetErrorString(e) + ")");
}
// A failed runtime call also leaves its error as the thread's last error; it is cleared
// before the throw, so that the next call's check_launch does not report it again.  (An
// experiment's launch shape that failed cudaFuncSetAttribute made every later cLN call of
// the process fail with "invalid argument": bench/results/nvidia-h200-s14b-tune-reread.log.
// The launchers' plans keep their shared memory under the limit, so no call on main is
// known to reach this.)
inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw_cuda(what, e);
  }
}
// After a kernel launch: configuration errors surface here, synchronously.
inline void check_launch(const char* what) { check_cuda(cudaGetLastError(), what); }

// kernel<<<grid, block, smem, stream>>>(args); `kernel` names a __global__
// function (pointer).  Under NORMK_HOST_EMULATION (tests) the CPU emulator
// of backends/cuda_ext/emu runs it instead.
#ifdef NORMK_HOST_EMULATION
#define NORMK_LAUNCH(kernel, grid, block, smem, stream) \
  ::normk_emu::Launch((kernel), (grid), (block), (smem), (stream))
#else
#define NORMK_LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>
#endif

// Whether launches on the current device can chain by programmatic dependent launch
// (sm_90+; cached per device).  The cLN launchers' `pdl` asks for it where it can.
bool pdl_supported();

// kernel<<<grid, block, smem, stream>>>(a) through cudaLaunchKernelEx: `pdl` launches it as
// a programmatic dependent of the launch before it in the stream (the kernel must
// pdl_wait, norm_common.cuh, before it reads anything that launch writes); `coop`
// cooperatively (every block resident at once, or a launch error).  The CPU emulator runs
// it as a plain launch.
template <typename K, typename Args>
void launch_ex(K* kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t st, bool pdl,
               bool coop, Args& a, const char* what) {
#ifdef NORMK_HOST_EMULATION
  (void)pdl;
  (void)coop;
  (void)what;
  NORMK_LAUNCH(kernel, grid, block, smem, st)(a);
#else
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  if (pdl) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (coop) {
    attrs[n].id = cudaLaunchAttributeCooperative;
    attrs[n].val.cooperative = 1;
    ++n;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  void* params[] = {&a};
  check_cuda(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(kernel), params), what);
#endif
}

// Zero `bytes` (a multiple of 4) of 16-byte aligned device memory at p on `stream`: with
// `pdl` by a kernel launched as a programmatic dependent of the launch before it, which lets
// the launch behind it (itself a dependent that waits first) start before it waits; else
// cudaMemsetAsync.  `what` names the call in a launch error.
void zero_workspace(void* p, size_t bytes, cudaStream_t stream, bool pdl, const char* what);

inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
inline long long cdiv(long long a, long long b) { return (a + b - 1) / b; }
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// An attribute of the current device, queried once per device: the launchers
// ask on every call, where the attribute call was host time on every call.
// For attributes that are never 0 (0 marks "not yet queried").
template <cudaDeviceAttr Attr>
int device_attribute(const char* what) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices];
  int dev = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  if (dev >= 0 && dev < kMaxDevices) {
    const int v = cache[dev].load(std::memory_order_relaxed);
    if (v > 0) return v;
  }
  int n = 0;
  check_cuda(cudaDeviceGetAttribute(&n, Attr, dev), what);
  if (dev >= 0 && dev < kMaxDevices) cache[dev].store(n, std::memory_order_relaxed);
  return n;
}

// Streaming multiprocessors of the current device (cached per device).
int sm_count();

// Blocks of `kernel` with `threads` threads and `smem` bytes of dynamic
// shared memory that fit on one SM of the current device (0 if none), after
// opting the kernel in to `smem` when it is above the 48 KB default.
// Cached per (device, kernel, threads, smem): the launchers plan twice per
// call (workspace size, then launch), and the attribute call plus the
// occupancy query were host time on every call.
int blocks_per_sm(const void* kernel, int threads, size_t smem);

// A compile-time list of launch configurations, each with a capacity
// `kCap` (channels or packs it holds in registers).  with_first_fit calls
// f(Cfg{}) for the first one whose capacity covers `need`, else the last
// (which then loops over chunks).
template <typename... Cs>
struct CfgList {};
template <typename F, typename... Cs>
void with_first_fit(CfgList<Cs...>, long long need, F&& f) {
  constexpr int n = sizeof...(Cs);
  constexpr long long caps[] = {Cs::kCap...};
  int pick = n - 1;
  for (int i = n - 1; i >= 0; --i)
    if (need <= caps[i]) pick = i;
  int i = 0;
  ((i++ == pick ? f(Cs{}) : void()), ...);
}

// Type tags for dispatch: f(TypePair<T, P>{}) with T the element type and
// P the parameter type (T or its accumulation type).
template <typename T_, typename P_>
struct TypePair {
  using T = T_;
  using P = P_;
};

// Deterministic column sums of a (K, W) acc matrix: columns [0, split) go
// to out0, [split, W) to out1 (see reduce_kernels.cuh).  `mid` is scratch of
// colsum_scratch_elems(K, W) elements.
size_t colsum_scratch_elems(long long K, int W);
// `pdl`: the launches chained behind the kernel that writes `in` (launch_ex).
template <typename A>
void colsum(const A* in, long long K, int W, A* out0, A* out1, int split, A* mid,
            cudaStream_t stream, bool pdl = false);

}  // namespace normk

// Dispatch on (dtype, param dtype): f(TypePair<T, P>{}).  P must be T or
// T's accumulation type; anything else throws naming the op.
namespace normk {

template <typename F>
void dispatch_types(DType dt, DType pt, const char* op, F&& f) {
  const auto bad = [&]() {
    throw std::runtime_error(std::string("cuda_ext: ") + op + ": parameters of dtype " +
                             dtype_name(pt) + " with input of dtype " + dtype_name(dt) +
                             " (parameters must have the input's dtype or its accumulation "
                             "dtype)");
  };
  switch (dt) {
    case DType::kF32:
      if (pt == DType::kF32) return f(TypePair<float, float>{});
      break;
    case DType::kF64:
      if (pt == DType::kF64) return f(TypePair<double, double>{});
      break;
    case DType::kF16:
      if (pt == DType::kF16) return f(TypePair<__half, __half>{});
      if (pt == DType::kF32) return f(TypePair<__half, float>{});
      break;
    case DType::kBF16:
      if (pt == DType::kBF16) return f(TypePair<__nv_bfloat16, __nv_bfloat16>{});
      if (pt == DType::kF32) return f(TypePair<__nv_bfloat16, float>{});
      break;
  }
  bad();
}

}  // namespace normk
