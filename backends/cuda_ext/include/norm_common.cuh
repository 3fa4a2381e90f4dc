// Framework-free building blocks shared by the cLN and RMSNorm kernels.
//
// NORMK_HOST_EMULATION (tests only): the PTX-level helpers (acquire/release
// flags, named barriers, cp.async, dynamic shared memory) come from
// backends/cuda_ext/emu/cuda_emu.h, which runs these kernels on the CPU.
//
// Nothing here knows about torch: kernels take plain pointers, sizes and
// strides, so the headers compile standalone with nvcc (the CPU CI does
// exactly that, see tests/test_cuda_ext_build.py).
//
// Conventions
//   T  element type of x / y / dy / dx: float, __half, __nv_bfloat16, double
//   P  parameter type (gamma, beta, weight): T or acc_t<T>
//   A  = acc_t<T>: float, or double for double.  Every statistic and every
//      reduction is carried in A (DESIGN.md section 3).
//
// Data move in 16-byte packs (V = 16 / sizeof(T) elements), held raw in a
// uint4 so that a pack of 16-bit values costs 4 registers, not 8, and is
// converted to A at the point of use (bf16 -> f32 is one shift / mask).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace normk {

constexpr unsigned kFullMask = 0xffffffffu;

template <typename T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};
template <typename T>
using acc_t = typename AccOf<T>::type;

template <typename T>
struct PackInfo {
  static constexpr int V = 16 / static_cast<int>(sizeof(T));
};

// ---------------------------------------------------------------------------
// Element <-> raw 16-byte pack.  `k` is always a compile-time constant after
// unrolling, so the word selects fold away.
// ---------------------------------------------------------------------------
__device__ __forceinline__ uint32_t pack_word(const uint4& u, int i) {
  return i == 0 ? u.x : (i == 1 ? u.y : (i == 2 ? u.z : u.w));
}
__device__ __forceinline__ void pack_set_word(uint4& u, int i, uint32_t w) {
  if (i == 0) u.x = w;
  else if (i == 1) u.y = w;
  else if (i == 2) u.z = w;
  else u.w = w;
}

template <typename T>
struct Elem;

template <>
struct Elem<float> {
  __device__ __forceinline__ static float to_acc(float v) { return v; }
  __device__ __forceinline__ static float from_acc(float v) { return v; }
  __device__ __forceinline__ static float get(const uint4& u, int k) {
    return __uint_as_float(pack_word(u, k));
  }
  __device__ __forceinline__ static void put(uint4& u, int k, float v) {
    pack_set_word(u, k, __float_as_uint(v));
  }
};

template <>
struct Elem<double> {
  __device__ __forceinline__ static double to_acc(double v) { return v; }
  __device__ __forceinline__ static double from_acc(double v) { return v; }
  __device__ __forceinline__ static double get(const uint4& u, int k) {
    return __hiloint2double(static_cast<int>(pack_word(u, 2 * k + 1)),
                            static_cast<int>(pack_word(u, 2 * k)));
  }
  __device__ __forceinline__ static void put(uint4& u, int k, double v) {
    pack_set_word(u, 2 * k, static_cast<uint32_t>(__double2loint(v)));
    pack_set_word(u, 2 * k + 1, static_cast<uint32_t>(__double2hiint(v)));
  }
};

template <>
struct Elem<__nv_bfloat16> {
  __device__ __forceinline__ static float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
  // Round to nearest even, the same rounding as torch's .to(bfloat16).
  __device__ __forceinline__ static __nv_bfloat16 from_acc(float v) {
    return __float2bfloat16_rn(v);
  }
  __device__ __forceinline__ static float get(const uint4& u, int k) {
    const uint32_t w = pack_word(u, k >> 1);
    return __uint_as_float((k & 1) ? (w & 0xffff0000u) : (w << 16));
  }
  // Two values rounded into one word (value a in the low half): one
  // conversion instruction per pair (F2FP) instead of two plus the merge.
  __device__ __forceinline__ static uint32_t pack2(float a, float b) {
    const __nv_bfloat162 p = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&p);
  }
  __device__ __forceinline__ static void put(uint4& u, int k, float v) {
    const uint32_t h = __bfloat16_as_ushort(__float2bfloat16_rn(v));
    const uint32_t w = pack_word(u, k >> 1);
    pack_set_word(u, k >> 1, (k & 1) ? ((w & 0x0000ffffu) | (h << 16)) : ((w & 0xffff0000u) | h));
  }
};

template <>
struct Elem<__half> {
  __device__ __forceinline__ static float to_acc(__half v) { return __half2float(v); }
  __device__ __forceinline__ static __half from_acc(float v) { return __float2half_rn(v); }
  __device__ __forceinline__ static float get(const uint4& u, int k) {
    const uint32_t w = pack_word(u, k >> 1);
    return __half2float(__ushort_as_half(static_cast<unsigned short>((k & 1) ? (w >> 16) : w)));
  }
  __device__ __forceinline__ static uint32_t pack2(float a, float b) {  // as for bfloat16
    const __half2 p = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&p);
  }
  __device__ __forceinline__ static void put(uint4& u, int k, float v) {
    const uint32_t h = __half_as_ushort(__float2half_rn(v));
    const uint32_t w = pack_word(u, k >> 1);
    pack_set_word(u, k >> 1, (k & 1) ? ((w & 0x0000ffffu) | (h << 16)) : ((w & 0xffff0000u) | h));
  }
};

// Cache policy of a streaming load.
enum class Ld : int {
  kNc,    // read-only path (ld.global.nc)
  kNoL1,  // read-only, no L1 allocation: read exactly once, keep L1 for others
  kCa,    // cache in L1 and L2: data this block reads again soon
  kCg,    // L2 only: data a later pass re-reads from L2
};

template <Ld H>
__device__ __forceinline__ uint4 ld16(const void* p) {
  const uint4* q = reinterpret_cast<const uint4*>(p);
  if constexpr (H == Ld::kNc) {
    return __ldg(q);
  } else if constexpr (H == Ld::kNoL1) {
#ifdef NORMK_HOST_EMULATION
    return *q;
#else
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(q));
    return r;
#endif
  } else if constexpr (H == Ld::kCa) {
    return __ldca(q);
  } else {
    return __ldcg(q);
  }
}

// Bring the line holding p into L1 without using a register.
__device__ __forceinline__ void prefetch_l1(const void* p) {
#ifndef NORMK_HOST_EMULATION
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}

// Load up to V elements starting at p.  `vec`: the 16-byte load is legal
// (p aligned and the whole pack in range); otherwise element-wise loads of
// the first `nvalid` elements (the rest read as 0).
template <typename T, Ld H>
__device__ __forceinline__ uint4 load_pack(const T* p, bool vec, int nvalid) {
  constexpr int V = PackInfo<T>::V;
  if (vec) return ld16<H>(p);
  uint4 u = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (k < nvalid) Elem<T>::put(u, k, Elem<T>::to_acc(p[k]));
  return u;
}

// V values (already in A) as one pack of T, rounding once.
template <typename T, typename A>
__device__ __forceinline__ uint4 to_pack(const A (&v)[PackInfo<T>::V]) {
  constexpr int V = PackInfo<T>::V;
  uint4 u;
  if constexpr (sizeof(T) == 2) {  // pairs: half the conversions
#pragma unroll
    for (int i = 0; i < V / 2; ++i) pack_set_word(u, i, Elem<T>::pack2(v[2 * i], v[2 * i + 1]));
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) Elem<T>::put(u, k, v[k]);
  }
  return u;
}

// Store V values (already in A) as T, rounding once.
template <typename T, typename A>
__device__ __forceinline__ void store_pack(T* p, const A (&v)[PackInfo<T>::V], bool vec,
                                           int nvalid) {
  constexpr int V = PackInfo<T>::V;
  if (vec) {
    *reinterpret_cast<uint4*>(p) = to_pack<T>(v);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (k < nvalid) p[k] = Elem<T>::from_acc(v[k]);
  }
}

// One parameter element (P is T or A) as A.
template <typename P, typename A>
__device__ __forceinline__ A load_param(const P* p, int64_t i) {
  return static_cast<A>(Elem<P>::to_acc(__ldg(p + i)));
}

// V consecutive parameter elements p[e0 .. e0+V) as A.  `vec`: p + e0 is
// 16-byte aligned and all V are in range (V * sizeof(P) is 16 or 32 bytes).
// p == nullptr (no affine parameter) gives ones.
template <typename T, typename P, typename A>
__device__ __forceinline__ void load_params(const P* p, int64_t e0, bool vec, int nvalid,
                                            A (&out)[PackInfo<T>::V]) {
  constexpr int V = PackInfo<T>::V;
  constexpr int VP = PackInfo<P>::V;
  if (p == nullptr) {  // no affine parameter: the identity weight
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = A(1);
    return;
  }
  if (vec) {
#pragma unroll
    for (int c = 0; c < V / VP; ++c) {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(p + e0) + c);
#pragma unroll
      for (int k = 0; k < VP; ++k) out[c * VP + k] = static_cast<A>(Elem<P>::get(u, k));
    }
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = k < nvalid ? load_param<P, A>(p, e0 + k) : A(1);
  }
}

// ---------------------------------------------------------------------------
// Parallel (Chan) combine of (count, mean, M2): a is the earlier partition.
// Exact when either side is empty, so an empty partition is an identity.
// ---------------------------------------------------------------------------
template <typename A>
__device__ __forceinline__ void chan_combine(A na, A ma, A Ma, A nb, A mb, A Mb, A& n, A& m,
                                             A& M) {
  const A nn = na + nb;
  if (nb == A(0)) {
    m = ma;
    M = Ma;
  } else if (na == A(0)) {
    m = mb;
    M = Mb;
  } else {
    const A d = mb - ma;
    const A w = nb / nn;
    m = ma + d * w;
    M = Ma + Mb + d * d * na * w;
  }
  n = nn;
}

// The same with exact integer counts (the prefix across tiles, where the
// running count C * t can pass 2^24 and would round in float).
template <typename A>
__device__ __forceinline__ void chan_combine_i(long long na, A ma, A Ma, long long nb, A mb, A Mb,
                                               long long& n, A& m, A& M) {
  const long long nn = na + nb;
  if (nb == 0) {
    m = ma;
    M = Ma;
  } else if (na == 0) {
    m = mb;
    M = Mb;
  } else {
    const A d = mb - ma;
    const A w = static_cast<A>(nb) / static_cast<A>(nn);
    m = ma + d * w;
    M = Ma + Mb + d * d * static_cast<A>(na) * w;
  }
  n = nn;
}

// Inclusive Chan scan over the 32 lanes of a warp (Hillis-Steele: lane l
// takes lane l - o at level o), exact integer counts; every lane calls it.
template <typename A>
__device__ __forceinline__ void chan_warp_scan_i(long long& n, A& m, A& M) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const long long on = __shfl_up_sync(kFullMask, n, o);
    const A om = __shfl_up_sync(kFullMask, m, o);
    const A oM = __shfl_up_sync(kFullMask, M, o);
    if (lane >= o) chan_combine_i(on, om, oM, n, m, M, n, m, M);
  }
}

// ---------------------------------------------------------------------------
// Inter-block publication (the cLN tile aggregates and group prefixes, see
// cln_kernels.cuh).  The writer stores the payload with st.relaxed.gpu, then
// the ready flag with st.release.gpu (release: the payload is visible to
// anyone who sees the flag).  A reader loads flags with ld.relaxed.gpu (several
// in flight at once: an ld.acquire per flag would wait for each load before
// issuing the next), spins until all it needs are set, then one
// fence.acq_rel.gpu (the acquire pattern of the PTX memory model) before the
// payload loads (ld.relaxed.gpu: from L2, never a stale L1 line).
// No float atomics anywhere: the combine order stays fixed.
// ---------------------------------------------------------------------------
#ifndef NORMK_HOST_EMULATION
__device__ __forceinline__ void flag_release(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ int flag_relaxed(const int* p) {
  int v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void fence_acquire() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ float ld_relaxed(const float* p) {
  float v;
  asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ double ld_relaxed(const double* p) {
  double v;
  asm volatile("ld.relaxed.gpu.global.f64 %0, [%1];" : "=d"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(float* p, float v) {
  asm volatile("st.relaxed.gpu.global.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed(double* p, double v) {
  asm volatile("st.relaxed.gpu.global.f64 [%0], %1;" ::"l"(p), "d"(v) : "memory");
}
// Published pairs (fp32 / fp16 / bf16 inputs, whose accumulators are
// float): each payload word travels with its own ready flag as one 64-bit
// access {value, 1}, single-copy atomic in the PTX memory model (which
// models wider accesses as several of at most 64 bits), so a reader that
// sees every flag of a word set has the whole payload without a separate
// flag load and fence: one L2 round trip per word instead of two.
// Relaxed at gpu scope: served by L2, never by a stale L1 line.
__device__ __forceinline__ void st_pair(float* p, float v) {
  const unsigned long long w = __float_as_uint(v) | (1ull << 32);
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(w) : "memory");
}
__device__ __forceinline__ unsigned long long ld_pair(const float* p) {
  unsigned long long w;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
  return w;
}
// Two pairs in one 16-byte vector access (p 16-byte aligned): still two
// 64-bit accesses to the memory model, so each pair stays whole.
__device__ __forceinline__ void st_pair2(float* p, float a, float b) {
  const unsigned long long wa = __float_as_uint(a) | (1ull << 32);
  const unsigned long long wb = __float_as_uint(b) | (1ull << 32);
  asm volatile("st.relaxed.gpu.global.v2.b64 [%0], {%1, %2};" ::"l"(p), "l"(wa), "l"(wb)
               : "memory");
}
__device__ __forceinline__ void ld_pair2(const float* p, unsigned long long& a,
                                         unsigned long long& b) {
  asm volatile("ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p)
               : "memory");
}
#endif  // else: backends/cuda_ext/emu/cuda_emu.h provides them

// Whether accumulator type A publishes pairs (st_pair) instead of a payload
// and a separate flag (fp64: an 8-byte payload word leaves no room for the
// flag in one 64-bit access).
template <typename A>
constexpr bool kPairs = sizeof(A) == 4;
// A pair's value and its ready flag.
__device__ __forceinline__ float pair_value(unsigned long long w) {
  return __uint_as_float(static_cast<uint32_t>(w));
}
__device__ __forceinline__ bool pair_ready(unsigned long long w) { return (w >> 32) != 0; }

// Programmatic dependent launch (sm_90+, PTX griddepcontrol; the launchers' `pdl`).
// pdl_wait: block until every launch this one depends on in the stream has finished and
// its writes are visible; returns at once in a plain launch.  pdl_trigger: the launch
// queued behind this one (launched as a dependent) may start once every block of this
// one has called it or exited; it waits with pdl_wait before it reads what this one
// writes.  No-ops on the CPU emulator and below sm_90.
__device__ __forceinline__ void pdl_wait() {
#if !defined(NORMK_HOST_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if !defined(NORMK_HOST_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The start of every kernel of a cLN chain (zero kernel, cLN kernel, column sums) launched
// with `pdl`: the next launch may start (it waits for this one before it reads what this one
// writes), then wait for the launch before (nothing is read before that).
__device__ __forceinline__ void pdl_chain_start() {
  pdl_trigger();
  pdl_wait();
}

// Spin until *p != 0 (relaxed loads; the caller fences before reading the
// payload).  Only ever called on flags of blocks with an earlier ticket,
// which are resident or done, so the wait terminates.
__device__ __forceinline__ void flag_spin(const int* p, int& v) {
  while (v == 0) {
    __nanosleep(20);
    v = flag_relaxed(p);
  }
}

// Named barrier among `nthreads` threads (a multiple of 32).  The
// non-.aligned form: warp-specialized code reaches it from different places.
#ifndef NORMK_HOST_EMULATION
__device__ __forceinline__ void named_barrier(int id, int nthreads) {
  asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}
// Arrive at a named barrier without waiting (producer / consumer hand-offs:
// the arriving threads' earlier shared-memory writes are visible to the
// threads that complete the barrier with named_barrier).
__device__ __forceinline__ void named_barrier_arrive(int id, int nthreads) {
  asm volatile("barrier.arrive %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

// Asynchronous global -> shared copies (sm_80+ cp.async), the streaming
// cLN kernels' tile loads (cln_stream.cuh).  N = 4, 8 or 16 bytes, both
// addresses N-aligned; valid == false zero-fills the N bytes and reads
// nothing (src-size 0; src must still be a mapped address).  16-byte copies
// bypass L1 (.cg: the tile is read once); smaller ones must use .ca.
template <int N>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool valid) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int n = valid ? N : 0;
  if constexpr (N == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(n)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(d), "l"(src), "n"(N),
                 "r"(n)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Wait until at most N of this thread's committed groups are in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// The block's dynamic shared memory.
template <typename A>
__device__ __forceinline__ A* dynamic_smem() {
  // 128-byte aligned: the TMA's shared-memory boxes (tma.cuh) need it.
  extern __shared__ __align__(128) unsigned char normk_dyn_smem[];
  return reinterpret_cast<A*>(normk_dyn_smem);
}
#endif

}  // namespace normk
