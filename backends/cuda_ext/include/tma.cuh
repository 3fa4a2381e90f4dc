// Hopper (sm_90) bulk tensor copies (the TMA unit) and the shared-memory
// mbarriers that complete them, for the streaming cLN kernels
// (cln_stream.cuh).  Framework-free.
//
// Why: the streaming kernels' cp.async path spends the producer warps' issue
// slots on one 16-byte copy instruction per pack (C x PPR per tile) and the
// output warps' on one 16-byte global store per pack; the TMA moves a whole
// tile box (up to 256 channel rows x BT frames) per instruction from one
// thread, and clips / zero-fills the frames past T in hardware.  Measured on
// the H200 against cp.async in one call (bench/results/nvidia-h200-s9-*.log,
// NOTES 12.1): +0.00-0.03 of copy bandwidth (fwd (16, 512, 4000) fp32 0.70 ->
// 0.73, bf16 fwd+bwd 0.45 -> 0.47), never more than 0.01 slower; the ring's
// load-store skeleton is the same with either (0.69-0.77), so the gain is the
// producer time it frees for the statistics.
//
// A tensor map (CUtensorMap, 128 bytes) is encoded on the host
// (csrc/tma_host.h) and passed inside the kernel's __grid_constant__
// argument struct; the device reads it from parameter space.
//
// NORMK_HOST_EMULATION (tests only): backends/cuda_ext/emu/cuda_emu.h
// provides these helpers, copying synchronously on the CPU.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (header only: nothing links libcuda)

#include "norm_common.cuh"

namespace normk {

#ifndef NORMK_HOST_EMULATION
// An mbarrier in shared memory (8 bytes, 8-byte aligned).
using mbar_t = uint64_t;

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The TMA instructions exist from sm_90 on; the extension is built for the
// GPU it runs on, and the launcher takes the TMA path only there
// (csrc/tma_host.h), so the trap below is unreachable on older GPUs.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define NORMK_TMA_UNSUPPORTED 1
#endif

__device__ __forceinline__ void mbar_init(mbar_t* b, unsigned count) {
#ifdef NORMK_TMA_UNSUPPORTED
  __trap();
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count)
               : "memory");
#endif
}
// After mbar_init, before the TMA unit may complete on them (the caller then
// synchronizes the block).
__device__ __forceinline__ void mbar_init_fence() {
#ifndef NORMK_TMA_UNSUPPORTED
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
// This thread's arrival, announcing `bytes` that TMA copies will complete.
__device__ __forceinline__ void mbar_arrive_expect_tx(mbar_t* b, unsigned bytes) {
#ifdef NORMK_TMA_UNSUPPORTED
  __trap();
#else
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)),
               "r"(bytes)
               : "memory");
#endif
}
// Wait for the completion of the phase with this parity (the u-th use of a
// barrier completes phase u; wait with parity u & 1).  Acquire: the bytes
// the TMA wrote are visible after it.
__device__ __forceinline__ void mbar_wait(mbar_t* b, unsigned parity) {
#ifdef NORMK_TMA_UNSUPPORTED
  __trap();
#else
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(smem_addr(b)), "r"(parity)
        : "memory");
#endif
}

// Global -> shared: the box of `map` at coordinates (c0, c1[, c2]), innermost
// first, into dst (128-byte aligned); completes on bar.  Elements outside the
// tensor are zero-filled.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1,
                                            mbar_t* bar) {
#ifdef NORMK_TMA_UNSUPPORTED
  __trap();
#else
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
      : "memory");
#endif
}
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1,
                                            int c2, mbar_t* bar) {
#ifdef NORMK_TMA_UNSUPPORTED
  __trap();
#else
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar))
      : "memory");
#endif
}
// Shared -> global: the box at (c0, c1, c2) from src (128-byte aligned);
// elements outside the tensor are not written.  In the thread's bulk group
// (tma_commit, tma_wait_read).
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int c0,
                                             int c1, int c2) {
#ifdef NORMK_TMA_UNSUPPORTED
  __trap();
#else
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
          map),
      "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
#endif
}
__device__ __forceinline__ void tma_commit() {
#ifndef NORMK_TMA_UNSUPPORTED
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}
// Until the TMA has read the shared memory of all but N of this thread's
// committed store groups (the buffer may then be overwritten).
template <int N>
__device__ __forceinline__ void tma_wait_read() {
#ifndef NORMK_TMA_UNSUPPORTED
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
#endif
}
// Until all but N of this thread's committed store groups are complete.
template <int N>
__device__ __forceinline__ void tma_wait() {
#ifndef NORMK_TMA_UNSUPPORTED
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
#endif
}
// Orders this thread's earlier shared-memory writes before later TMA reads
// of them (the generic and the async proxy); then a barrier, then the store.
__device__ __forceinline__ void fence_proxy_async() {
#ifndef NORMK_TMA_UNSUPPORTED
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
#endif  // else: backends/cuda_ext/emu/cuda_emu.h provides them

}  // namespace normk
