// A CPU emulator of the CUDA features the cuda_ext kernels use, so that CI
// (no GPU) runs the real kernel and launcher code: every .cu file compiles
// as C++ with -DNORMK_HOST_EMULATION -include this header, and
// emu_selftest.cpp compares the results with a float64 reference.
//
// Model: a launch runs its blocks one after another, in blockIdx order; the
// threads of a block are fibers on one OS thread, switched at every barrier
// (__syncthreads, named barriers, and the two barriers of each warp shuffle
// or ballot), so divergent warp-specialized code synchronizes as on a GPU,
// and a barrier nobody can complete is reported as a deadlock.  Shared
// memory is a function-local static (one block at a time).  Blocks run in
// blockIdx order, which is also ticket order, so every flag a cLN block
// waits on was published by an earlier block: a flag spin (__nanosleep)
// here means the kernel waits on a later ticket, which could deadlock a
// GPU, and aborts with a message.
//
// Not a performance model, and not a memory-model checker: it tests the
// indexing, the masking, the scans, the ticket order and the
// cross-tile prefix arithmetic.
#pragma once

#include <cuda.h>  // CUtensorMap (the emulated TMA keeps its own fields in it)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#undef __shared__
#define __shared__ static
#undef __global__
#define __global__
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __grid_constant__
#define __grid_constant__

// ---- thread identity (set by the scheduler before it resumes a thread) ------
inline uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

namespace normk_emu {

// The CUDA threads of a block are fibers (ucontext) on the calling OS
// thread, resumed round-robin; a barrier parks a fiber until its count has
// arrived.  If every unfinished fiber is parked, the kernel has a barrier
// bug: report it and abort instead of hanging.
struct Fiber {
  ucontext_t ctx;
  std::vector<char> stack;
  uint3 tid;
  bool done = false;
  bool parked = false;
};

struct Sched {
  ucontext_t main;
  std::vector<Fiber> fibers;
  int cur = -1;
  std::function<void()> body;
};
inline Sched& sched() {
  static Sched s;
  return s;
}

inline void yield_to_scheduler() {
  Sched& s = sched();
  swapcontext(&s.fibers[s.cur].ctx, &s.main);
}

class Barrier {
 public:
  void arrive_and_wait(unsigned count) {
    if (arrive(count)) return;
    Sched& s = sched();
    waiters_.push_back(s.cur);
    s.fibers[s.cur].parked = true;
    yield_to_scheduler();
  }
  // bar.arrive: count this thread, never wait; true when it completed the barrier.
  bool arrive(unsigned count) {
    if (++arrived_ < count) return false;
    Sched& s = sched();
    arrived_ = 0;
    for (int w : waiters_) s.fibers[w].parked = false;
    waiters_.clear();
    return true;
  }
  // A block must leave every barrier it used complete (a later block reuses them).
  bool idle() const { return arrived_ == 0 && waiters_.empty(); }

 private:
  unsigned arrived_ = 0;
  std::vector<int> waiters_;
};

struct Warp {
  Barrier bar;
  uint64_t buf[32];
};

struct Block {
  Barrier barriers[16];  // 0: __syncthreads; others: named barriers
  std::vector<Warp> warps;
  std::vector<unsigned char> dyn_smem;
};

inline Block& block() {
  static Block b;
  return b;
}

inline unsigned tid_linear() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

template <typename T>
T warp_exchange(T v, int src_lane) {
  const unsigned t = tid_linear();
  Warp& w = block().warps[t / 32];
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  w.buf[t % 32] = bits;
  w.bar.arrive_and_wait(32);
  const uint64_t r = w.buf[src_lane];
  w.bar.arrive_and_wait(32);
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}

inline void fiber_main() {
  Sched& s = sched();
  s.body();
  s.fibers[s.cur].done = true;
  swapcontext(&s.fibers[s.cur].ctx, &s.main);
}

// Run one block: nt fibers, round-robin until all are done.
inline void run_block(unsigned nt, const dim3& blk) {
  constexpr size_t kStack = 64 * 1024;
  Sched& s = sched();
  s.fibers.resize(nt);
  for (unsigned t = 0; t < nt; ++t) {
    Fiber& f = s.fibers[t];
    f.stack.resize(kStack);
    f.done = f.parked = false;
    f.tid = make_uint3(t % blk.x, (t / blk.x) % blk.y, t / (blk.x * blk.y));
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_main, 0);
  }
  unsigned left = nt;
  while (left > 0) {
    bool progressed = false;
    for (unsigned t = 0; t < nt; ++t) {
      Fiber& f = s.fibers[t];
      if (f.done || f.parked) continue;
      s.cur = static_cast<int>(t);
      threadIdx = f.tid;
      swapcontext(&s.main, &f.ctx);
      progressed = true;
      if (f.done) --left;
    }
    if (!progressed) {
      std::fprintf(stderr, "cuda_emu: deadlock: %u threads of block (%u,%u,%u) wait at barriers\n",
                   left, blockIdx.x, blockIdx.y, blockIdx.z);
      std::abort();
    }
  }
}

template <typename F>
struct Launch {
  F* kernel;
  dim3 grid, blk;
  size_t smem;
  Launch(F* k, dim3 g, dim3 b, size_t sm, cudaStream_t) : kernel(k), grid(g), blk(b), smem(sm) {}

  template <typename Args>
  void operator()(const Args& args) const {
    gridDim = grid;
    blockDim = blk;
    const unsigned nt = blk.x * blk.y * blk.z;
    Block& b = block();
    b.warps = std::vector<Warp>((nt + 31) / 32);
    b.dyn_smem.assign(smem + 16, 0);
    sched().body = [&] { kernel(args); };
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          blockIdx = make_uint3(x, y, z);
          run_block(nt, blk);
          for (int id = 0; id < 16; ++id)
            if (!b.barriers[id].idle()) {
              std::fprintf(stderr,
                           "cuda_emu: block (%u,%u,%u) exited with barrier %d incomplete (an "
                           "arrive nobody waited for, or a wait nobody completed)\n",
                           x, y, z, id);
              std::abort();
            }
        }
  }
};
template <typename F>
Launch(F*, dim3, dim3, size_t, cudaStream_t) -> Launch<F>;

// ---- TMA tensor maps: the encoder's arguments, kept in the opaque bytes ------
struct EmuTmap {
  unsigned char* base;
  int rank, esize;
  uint64_t dims[3];
  uint64_t strides[3];  // bytes; strides[0] = esize
  uint32_t box[3];
};
static_assert(sizeof(EmuTmap) <= sizeof(CUtensorMap), "the emulated map must fit");
inline void emu_tma_encode(CUtensorMap* map, const void* base, int rank, int esize,
                           const uint64_t* dims, const uint64_t* strides, const uint32_t* box) {
  EmuTmap m{};
  m.base = static_cast<unsigned char*>(const_cast<void*>(base));
  m.rank = rank;
  m.esize = esize;
  m.strides[0] = static_cast<uint64_t>(esize);
  for (int i = 0; i < rank; ++i) {
    m.dims[i] = dims[i];
    m.box[i] = box[i];
    if (i > 0) m.strides[i] = strides[i - 1];
    // The encoder's own checks (cuTensorMapEncodeTiled), so that a launcher
    // passing a map the GPU would refuse fails here too.
    if (box[i] == 0 || box[i] > 256 || (i > 0 && strides[i - 1] % 16 != 0) ||
        (reinterpret_cast<uintptr_t>(base) % 16) != 0 ||
        (static_cast<uint64_t>(box[0]) * esize) % 16 != 0) {
      std::fprintf(stderr, "cuda_emu: a tensor map the encoder would refuse (dim %d)\n", i);
      std::abort();
    }
  }
  for (int i = rank; i < 3; ++i) {
    m.dims[i] = 1;
    m.box[i] = 1;
    m.strides[i] = m.strides[i - 1] * m.dims[i - 1];
  }
  std::memset(map, 0, sizeof(CUtensorMap));
  std::memcpy(map, &m, sizeof(m));
}
// Copy the box at coordinates c between the tensor and the dense buffer
// `smem` ([box2][box1][box0]); load: out-of-bounds elements read as zeros;
// store: they are skipped.  Returns the box's bytes.
inline long long emu_tma_copy(const CUtensorMap* map, const int* c, unsigned char* smem,
                              bool load) {
  EmuTmap m;
  std::memcpy(&m, map, sizeof(m));
  // The GPU needs 128-byte aligned boxes; the dynamic shared memory starts
  // 128-byte aligned there (norm_common.cuh), so check the offset into it.
  const unsigned char* dyn = block().dyn_smem.data();
  if ((smem - dyn) % 128 != 0) {
    std::fprintf(stderr, "cuda_emu: a TMA box at shared-memory offset %lld (not 128-byte aligned)\n",
                 static_cast<long long>(smem - dyn));
    std::abort();
  }
  long long n = 0;
  for (uint32_t i2 = 0; i2 < m.box[2]; ++i2)
    for (uint32_t i1 = 0; i1 < m.box[1]; ++i1)
      for (uint32_t i0 = 0; i0 < m.box[0]; ++i0, n += m.esize) {
        const long long g0 = c[0] + static_cast<long long>(i0);
        const long long g1 = c[1] + static_cast<long long>(i1);
        const long long g2 = c[2] + static_cast<long long>(i2);
        const bool in = g0 >= 0 && g1 >= 0 && g2 >= 0 && g0 < static_cast<long long>(m.dims[0]) &&
                        g1 < static_cast<long long>(m.dims[1]) &&
                        g2 < static_cast<long long>(m.dims[2]);
        unsigned char* s = smem + n;
        unsigned char* g = in ? m.base + g0 * m.strides[0] + g1 * m.strides[1] + g2 * m.strides[2]
                              : nullptr;
        if (load) {
          if (in)
            std::memcpy(s, g, m.esize);
          else
            std::memset(s, 0, m.esize);
        } else if (in) {
          std::memcpy(g, s, m.esize);
        }
      }
  return n;
}

}  // namespace normk_emu

// ---- intrinsics -----------------------------------------------------------
inline void __syncthreads() { normk_emu::block().barriers[0].arrive_and_wait(blockDim.x * blockDim.y * blockDim.z); }
inline void __nanosleep(unsigned) {
  std::fprintf(stderr,
               "cuda_emu: block %u spins on a flag no earlier block published (a wait on a later "
               "ticket: a possible deadlock on a GPU)\n",
               blockIdx.x);
  std::abort();
}
inline int __ffs(unsigned v) { return __builtin_ffs(static_cast<int>(v)); }
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}

template <typename T>
T __shfl_sync(unsigned, T v, int src) {
  return normk_emu::warp_exchange(v, src & 31);
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int m) {
  return normk_emu::warp_exchange(v, static_cast<int>(normk_emu::tid_linear() % 32) ^ m);
}
template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned d) {
  const int lane = static_cast<int>(normk_emu::tid_linear() % 32);
  return normk_emu::warp_exchange(v, lane >= static_cast<int>(d) ? lane - static_cast<int>(d) : lane);
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned d) {
  const int lane = static_cast<int>(normk_emu::tid_linear() % 32);
  return normk_emu::warp_exchange(v, lane + static_cast<int>(d) < 32 ? lane + static_cast<int>(d) : lane);
}
// A warp barrier: every lane of the warp meets in one exchange (full masks
// only, as in the kernels).
inline void __syncwarp(unsigned = 0xffffffffu) { (void)normk_emu::warp_exchange(0, 0); }
inline unsigned __ballot_sync(unsigned, int pred) {
  unsigned mask = 0;
  for (int l = 0; l < 32; ++l) {
    const int p = normk_emu::warp_exchange(pred ? 1 : 0, l);
    if (p) mask |= 1u << l;
  }
  return mask;
}

inline float __uint_as_float(unsigned v) {
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned v;
  std::memcpy(&v, &f, 4);
  return v;
}
inline double __hiloint2double(int hi, int lo) {
  const uint64_t b = (static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32) | static_cast<uint32_t>(lo);
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}
inline int __double2loint(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return static_cast<int>(static_cast<uint32_t>(b));
}
inline int __double2hiint(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return static_cast<int>(static_cast<uint32_t>(b >> 32));
}

template <typename T>
T __ldg(const T* p) { return *p; }
template <typename T>
T __ldca(const T* p) { return *p; }
template <typename T>
T __ldcg(const T* p) { return *p; }
template <typename T>
void __stcg(T* p, T v) { *p = v; }

inline int min(int a, int b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }

// ---- the PTX-level helpers of norm_common.cuh -------------------------------
namespace normk {
inline void flag_release(int* p, int v) { *p = v; }
inline int flag_relaxed(const int* p) { return *p; }
inline void fence_acquire() {}
template <typename A>
A ld_relaxed(const A* p) { return *p; }
template <typename A>
void st_relaxed(A* p, A v) { *p = v; }
inline void st_pair(float* p, float v) {
  const unsigned long long w = __float_as_uint(v) | (1ull << 32);
  std::memcpy(p, &w, 8);
}
inline unsigned long long ld_pair(const float* p) {
  unsigned long long w;
  std::memcpy(&w, p, 8);
  return w;
}
inline void st_pair2(float* p, float a, float b) {
  st_pair(p, a);
  st_pair(p + 2, b);
}
inline void ld_pair2(const float* p, unsigned long long& a, unsigned long long& b) {
  a = ld_pair(p);
  b = ld_pair(p + 2);
}
inline void named_barrier(int id, int nthreads) {
  normk_emu::block().barriers[id].arrive_and_wait(static_cast<unsigned>(nthreads));
}
inline void named_barrier_arrive(int id, int nthreads) {
  normk_emu::block().barriers[id].arrive(static_cast<unsigned>(nthreads));
}
// cp.async: the copy happens at once (a legal schedule: the kernel may only
// read the data after a wait, which is then a no-op).
template <int N>
void cp_async(void* dst, const void* src, bool valid) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async copies 4, 8 or 16 bytes");
  if (valid)
    std::memcpy(dst, src, N);
  else
    std::memset(dst, 0, N);
}
inline void cp_async_commit() {}
template <int N>
void cp_async_wait() {}
template <typename A>
A* dynamic_smem() {
  return reinterpret_cast<A*>(normk_emu::block().dyn_smem.data());
}

// ---- TMA (include/tma.cuh) ----------------------------------------------------
// A tensor map holds the encoder's arguments (normk_emu::EmuTmap); a load
// copies the box at once and completes its bytes on the mbarrier, a store
// copies at once (both legal schedules: the kernel reads a loaded box only
// after the mbarrier's phase completes, and reuses a stored buffer only
// after tma_wait_read).
struct mbar_t {
  unsigned count = 0, pending = 0, phase = 0;
  long long tx = 0;
};
inline void mbar_complete_if_done(mbar_t* b) {
  if (b->pending == 0 && b->tx == 0) {
    ++b->phase;
    b->pending = b->count;
  }
}
inline void mbar_init(mbar_t* b, unsigned count) {
  b->count = b->pending = count;
  b->phase = 0;
  b->tx = 0;
}
inline void mbar_init_fence() {}
inline void mbar_arrive_expect_tx(mbar_t* b, unsigned bytes) {
  if (b->pending == 0) {
    std::fprintf(stderr, "cuda_emu: mbarrier arrival beyond its count\n");
    std::abort();
  }
  b->tx += bytes;
  --b->pending;
  mbar_complete_if_done(b);
}
// Phase `parity` completes when the phase counter moves past it; other
// threads run meanwhile (the copies are issued by one of them).
inline void mbar_wait(mbar_t* b, unsigned parity) {
  long spins = 0;
  while ((b->phase & 1u) == (parity & 1u)) {
    if (++spins > 100000000L) {
      std::fprintf(stderr, "cuda_emu: an mbarrier phase never completed (block %u)\n",
                   blockIdx.x);
      std::abort();
    }
    normk_emu::yield_to_scheduler();
  }
}
inline void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, mbar_t* bar) {
  const int c[3] = {c0, c1, 0};
  bar->tx -= normk_emu::emu_tma_copy(map, c, static_cast<unsigned char*>(dst), true);
  mbar_complete_if_done(bar);
}
inline void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, mbar_t* bar) {
  const int c[3] = {c0, c1, c2};
  bar->tx -= normk_emu::emu_tma_copy(map, c, static_cast<unsigned char*>(dst), true);
  mbar_complete_if_done(bar);
}
inline void tma_store_3d(const CUtensorMap* map, const void* src, int c0, int c1, int c2) {
  const int c[3] = {c0, c1, c2};
  normk_emu::emu_tma_copy(map, c, static_cast<unsigned char*>(const_cast<void*>(src)), false);
}
inline void tma_commit() {}
template <int N>
void tma_wait_read() {}
template <int N>
void tma_wait() {}
inline void fence_proxy_async() {}
}  // namespace normk
