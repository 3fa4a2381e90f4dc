// RMSNorm forward and backward over the last dimension of a (M, N) matrix
// whose rows may be strided (x row stride ldx >= N, unit column stride).
// Framework-free (see norm_common.cuh).
//
// A "row group" of TPRW threads owns one row: TPRW = 32 (one warp per row,
// NT / 32 rows per block) for short rows, TPRW = NT (one block per row) for
// long ones.  Each thread holds VPT 16-byte packs of the row in registers
// (pack i of thread l is pack i * TPRW + l of the row, so every load
// instruction of a warp reads 512 contiguous bytes).  A row longer than
// TPRW * VPT packs is processed in `nchunks` chunks: pass 1 accumulates
// sum(x^2) over all chunks, pass 2 re-reads them (from L2) to write y, so
// any N works (N >= 262144 included) at the cost of a second, L2-resident,
// read.
//
// Backward is persistent: gridDim.x blocks (the number that fit on the GPU
// at once) each take row groups blockIdx.x, +gridDim.x, ... in a fixed order
// and accumulate dw = sum_rows dy * xhat for their columns, in shared memory
// (each (warp slice, column) has exactly one owner thread: no atomics), or,
// when the row is too long for shared memory, directly in their own row of
// the global partial buffer.  Per-block partials are then summed over the
// blocks in a fixed order (reduce_kernels.cuh): deterministic dw.
//
// Rows that fit one pass of a row group's registers, in fp32 / fp16 / bf16
// up to N = 8192, take rms_bwd_row_kernel instead: 16 elements per thread,
// w loaded once per block, the dw partial in registers (fp32) or in shared
// memory (16-bit rows, two blocks per SM: see the kernel).  The
// general kernel below spends about 20 instructions per element by its
// source (every value converted and w loaded twice, dw read-modified-written
// in shared memory): ncu at (16384, 8192) bf16, 245 us for the backward at 67 % of
// DRAM bandwidth against 198 us at 83 % for Triton's
// (bench/results/nvidia-h200-s5-ncu-rms-bwd-*.txt).  fwd+bwd fraction of copy
// bandwidth, general -> row kernel (-s5-tune-rmsnorm-row.log): fp32
// (16384, 8192) 0.83 -> 0.90, (32768, 4096) 0.88 -> 0.89, (2048, 4096)
// 59.4 -> 54.8 us; bf16 (16384, 8192) 0.78 -> 0.78, (32768, 4096) 0.85 ->
// 0.83, (2048, 4096) 47.9 -> 43.3 us.  Session 6 (-s6b-tune-rmsnorm-row.log):
// 16-bit rows at 64 registers and 16-byte partial stores, bf16 (16384, 8192)
// 0.78 -> 0.86, (32768, 4096) 0.83 -> 0.89, (2048, 4096) 43.3 -> 36.0 us
// (the row kernel alone 28.4 -> 19.4 us, torch.profiler).  Its optional
// ring of cp.async stages (S > 1) measured slower everywhere (rms_bwd.cu,
// with_row_stages).
#pragma once

#include "norm_common.cuh"

namespace normk {

template <typename T, typename P>
struct RmsFwdArgs {
  using A = acc_t<T>;
  const T* x;
  long long ldx;   // row stride of x in elements
  const P* w;      // nullable
  T* y;            // (M, N) contiguous
  A* rstd;         // (M,)
  int M, N;
  int nchunks;     // ceil(packs per row / (TPRW * VPT))
  int vec;         // 16-byte accesses legal for x, y (and w when wvec)
  int wvec;        // weight 16-byte aligned
  A eps;
};

template <typename T, typename P>
struct RmsBwdArgs {
  using A = acc_t<T>;
  const T* dy;     // (M, N) contiguous
  const T* x;
  long long ldx;
  const P* w;      // nullable
  const A* rstd;   // (M,)
  T* dx;           // (M, N) contiguous
  A* partial;      // (gridDim.x, N) per-block dw partials; nullable
  int M, N;
  int nchunks;
  int vec;
  int wvec;
  int dw_smem;     // accumulate dw in shared memory (else in `partial`, pre-zeroed)
};

// Sum over the TPRW threads of a row group; every thread gets the total.
// The cross-warp step (TPRW == NT > 32) uses `red` (NT / 32 entries) and
// sums it in a fixed order.
template <int NT, int TPRW, typename A>
__device__ __forceinline__ A rms_row_sum(A v, A* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  if constexpr (TPRW > 32) {
    constexpr int NW = TPRW / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    A s = A(0);
#pragma unroll
    for (int w = 0; w < NW; ++w) s += red[w];
    __syncthreads();  // `red` is reused by the next call
    return s;
  } else {
    return v;
  }
}

// Registers per thread: VPT packs of x (4 each).  MB (blocks per SM for
// __launch_bounds__) is chosen by the launcher's table so that ptxas reports
// no spills.
template <typename T, typename P, int NT, int TPRW, int VPT, int MB>
__global__ void __launch_bounds__(NT, MB) rms_fwd_kernel(const RmsFwdArgs<T, P> args) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  constexpr int RPB = NT / TPRW;  // rows per block
  constexpr int CW = TPRW * VPT;  // packs per chunk
  __shared__ A s_red[NT / 32];

  const int tid = threadIdx.x;
  const int lt = tid % TPRW;
  const long long row = static_cast<long long>(blockIdx.x) * RPB + tid / TPRW;
  const bool row_ok = row < args.M;
  const int N = args.N;
  const T* xr = args.x + (row_ok ? row : 0) * args.ldx;
  T* yr = args.y + (row_ok ? row : 0) * static_cast<long long>(N);
  const bool once = args.nchunks == 1;

  uint4 pk[VPT];
  A ss = A(0);
  for (int ch = 0; ch < args.nchunks; ++ch) {
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int e0 = ((ch * CW) + i * TPRW + lt) * V;
      const int nv = N - e0;
      const bool in = row_ok && nv > 0;
      const bool vec = args.vec && nv >= V;
      // A row read once goes around L1; a chunked row is re-read from L2.
      if (!in)
        pk[i] = make_uint4(0u, 0u, 0u, 0u);
      else if (once)
        pk[i] = load_pack<T, Ld::kNoL1>(xr + e0, vec, nv);
      else
        pk[i] = load_pack<T, Ld::kCg>(xr + e0, vec, nv);
    }
#pragma unroll
    for (int i = 0; i < VPT; ++i)
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const A v = Elem<T>::get(pk[i], k);
        ss += v * v;
      }
  }
  ss = rms_row_sum<NT, TPRW>(ss, s_red);
  const A r = A(1) / sqrt(ss / static_cast<A>(N) + args.eps);
  if (row_ok && lt == 0) args.rstd[row] = r;

  for (int ch = 0; ch < args.nchunks; ++ch) {
    if (!once) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int e0 = ((ch * CW) + i * TPRW + lt) * V;
        const int nv = N - e0;
        pk[i] = (row_ok && nv > 0) ? load_pack<T, Ld::kCg>(xr + e0, args.vec && nv >= V, nv)
                                   : make_uint4(0u, 0u, 0u, 0u);
      }
    }
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int e0 = ((ch * CW) + i * TPRW + lt) * V;
      const int nv = N - e0;
      if (row_ok && nv > 0) {
        const bool vec = args.vec && nv >= V;
        A wv[V];  // ones when there is no weight
        load_params<T, P, A>(args.w, e0, args.wvec && vec, nv, wv);
        A out[V];
        // (x * rstd) * w: the rounding order of the eager reference.
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = (Elem<T>::get(pk[i], k) * r) * wv[k];
        store_pack<T>(yr + e0, out, vec, nv);
      }
    }
  }
}

template <typename T, typename P, int NT, int TPRW, int VPT, int MB>
__global__ void __launch_bounds__(NT, MB) rms_bwd_kernel(const RmsBwdArgs<T, P> args) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  constexpr int RPB = NT / TPRW;
  constexpr int CW = TPRW * VPT;
  constexpr int SLICE = VPT * V * TPRW;  // dw entries of one row group (smem mode)
  __shared__ A s_red[NT / 32];
  A* s_dw = dynamic_smem<A>();  // [RPB][VPT * V][TPRW] in smem mode

  const int tid = threadIdx.x;
  const int lt = tid % TPRW;
  const int rg = tid / TPRW;  // row within the block's group
  const int N = args.N;
  const bool once = args.nchunks == 1;
  const bool want_dw = args.partial != nullptr;
  const bool dw_smem = want_dw && args.dw_smem;
  A* gdw = want_dw ? args.partial + static_cast<long long>(blockIdx.x) * N : nullptr;

  if (dw_smem) {
    for (int i = tid; i < RPB * SLICE; i += NT) s_dw[i] = A(0);
    // Ordered before the first update by the barrier in rms_row_sum or below.
    __syncthreads();
  }

  const long long groups = (static_cast<long long>(args.M) + RPB - 1) / RPB;
  for (long long grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const long long row = grp * RPB + rg;
    const bool row_ok = row < args.M;
    const T* xr = args.x + (row_ok ? row : 0) * args.ldx;
    const T* dyr = args.dy + (row_ok ? row : 0) * static_cast<long long>(N);
    T* dxr = args.dx + (row_ok ? row : 0) * static_cast<long long>(N);
    const A r = row_ok ? args.rstd[row] : A(0);

    uint4 xk[VPT], gk[VPT];
    A sgx = A(0);  // sum over the row of g * xhat
    for (int ch = 0; ch < args.nchunks; ++ch) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int e0 = ((ch * CW) + i * TPRW + lt) * V;
        const int nv = N - e0;
        const bool in = row_ok && nv > 0;
        const bool vec = args.vec && nv >= V;
        if (!in) {
          xk[i] = gk[i] = make_uint4(0u, 0u, 0u, 0u);
        } else if (once) {
          xk[i] = load_pack<T, Ld::kNoL1>(xr + e0, vec, nv);
          gk[i] = load_pack<T, Ld::kNoL1>(dyr + e0, vec, nv);
        } else {
          xk[i] = load_pack<T, Ld::kCg>(xr + e0, vec, nv);
          gk[i] = load_pack<T, Ld::kCg>(dyr + e0, vec, nv);
        }
      }
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int e0 = ((ch * CW) + i * TPRW + lt) * V;
        const int nv = N - e0;
        if (row_ok && nv > 0) {
          A wv[V];  // ones when there is no weight
          load_params<T, P, A>(args.w, e0, args.wvec && args.vec && nv >= V, nv, wv);
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const A dyv = Elem<T>::get(gk[i], k);
            const A xh = Elem<T>::get(xk[i], k) * r;
            sgx += (dyv * wv[k]) * xh;
            if (dw_smem) {
              s_dw[rg * SLICE + (i * V + k) * TPRW + lt] += dyv * xh;
            } else if (want_dw && k < nv) {
              gdw[e0 + k] += dyv * xh;
            }
          }
        }
      }
    }
    const A c = rms_row_sum<NT, TPRW>(sgx, s_red) / static_cast<A>(N);

    for (int ch = 0; ch < args.nchunks; ++ch) {
      if (!once) {
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
          const int e0 = ((ch * CW) + i * TPRW + lt) * V;
          const int nv = N - e0;
          const bool in = row_ok && nv > 0;
          const bool vec = args.vec && nv >= V;
          xk[i] = in ? load_pack<T, Ld::kCg>(xr + e0, vec, nv) : make_uint4(0u, 0u, 0u, 0u);
          gk[i] = in ? load_pack<T, Ld::kCg>(dyr + e0, vec, nv) : make_uint4(0u, 0u, 0u, 0u);
        }
      }
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int e0 = ((ch * CW) + i * TPRW + lt) * V;
        const int nv = N - e0;
        if (row_ok && nv > 0) {
          const bool vec = args.vec && nv >= V;
          A wv[V];  // ones when there is no weight
          load_params<T, P, A>(args.w, e0, args.wvec && vec, nv, wv);
          A out[V];
          // rstd * (g - xhat * mean(g * xhat)), as in the eager reference.
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const A xh = Elem<T>::get(xk[i], k) * r;
            out[k] = r * (Elem<T>::get(gk[i], k) * wv[k] - xh * c);
          }
          store_pack<T>(dxr + e0, out, vec, nv);
        }
      }
    }
  }

  if (dw_smem) {
    __syncthreads();
    // Each block writes its whole partial row: slices summed in order.
    for (int idx = tid; idx < SLICE; idx += NT) {
      const int l = idx % TPRW;
      const int ik = idx / TPRW;
      const int col = ((ik / V) * TPRW + l) * V + (ik % V);
      if (col < N) {
        A s = A(0);
#pragma unroll
        for (int g = 0; g < RPB; ++g) s += s_dw[g * SLICE + idx];
        gdw[col] = s;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Backward of rows that fit the row group's registers (see the top).  S = 1:
// plain loads; S >= 2: a ring of S stages in shared memory, private to each
// thread (a thread copies, with cp.async, exactly the packs it reads later,
// so no block barrier guards the ring: cp.async.wait_group does).
// The dw partial lives in registers, or, where MB blocks of NT threads leave
// at most 64 registers per thread (rms_row_dw_smem), in shared memory: with
// the partial (16 floats) and xhat and g held across the row sum, a 16-bit
// row kernel took ~120 registers, one row of 8192 per SM in flight
// (rms_common.h has the figures of both).
// Shared memory: the ring [S][NT][2 * VPT + 1] packs (x, dy, then in lane
// 0's slot the row's rstd; an odd number of 16-byte slots per thread, so
// that the 8 threads of a quarter warp hit 8 different 4-bank groups), then the dw partial
// [E / 4][NT] float4 in shared-dw mode (consecutive threads, consecutive 16
// bytes: no bank conflict); or the ring reused at the end for the dw slices
// [RPB][E][TPRW] of A when a block has several row slots.
// ---------------------------------------------------------------------------
template <int NT, int TPRW, int MB>
__host__ __device__ constexpr bool rms_row_dw_smem() {
  return NT == TPRW && 65536 / (NT * MB) <= 64;
}

template <typename T, int NT, int TPRW, int VPT, int MB, int S>
__host__ __device__ constexpr size_t rms_bwd_row_smem() {
  constexpr size_t ring = S > 1 ? static_cast<size_t>(S) * NT * (2 * VPT + 1) * 16 : 0;
  constexpr size_t dw_slices = static_cast<size_t>(NT / TPRW) * VPT * PackInfo<T>::V * TPRW *
                               sizeof(acc_t<T>);
  if constexpr (rms_row_dw_smem<NT, TPRW, MB>())
    return ring + dw_slices;  // one row slot: the slice is the running partial
  else
    return NT == TPRW ? ring : (ring > dw_slices ? ring : dw_slices);
}

// One thread's copies of a row into its ring slot: its VPT packs of x and
// of dy (zeros for a row past M or a pack past N); lane 0 of each warp also
// copies the row's rstd into its slot, which the warp reads after a
// __syncwarp.  (Every thread copied it before: 4-byte cp.asyncs of one word,
// suspected of the doubled L2 requests ncu counted for the ring at (16384,
// 8192) bf16, bench/results/nvidia-h200-s6-ncu-rms-row-S*.txt; one copy per
// warp changed nothing measurable, NOTES section 9.2.)
template <typename T, int VPT>
__device__ __forceinline__ void rms_row_issue(uint4* slot, const T* xr, const T* dyr,
                                              const acc_t<T>* rs, bool ok, int lt, int TPRW,
                                              int N) {
  constexpr int V = PackInfo<T>::V;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int e0 = (i * TPRW + lt) * V;
    const bool in = ok && e0 < N;
    cp_async<16>(slot + i, in ? xr + e0 : xr, in);
    cp_async<16>(slot + VPT + i, in ? dyr + e0 : dyr, in);
  }
  if ((threadIdx.x & 31) == 0) cp_async<sizeof(acc_t<T>)>(slot + 2 * VPT, rs, ok);
}

template <typename T, typename P, int NT, int TPRW, int VPT, int MB, int S>
__global__ void __launch_bounds__(NT, MB) rms_bwd_row_kernel(const RmsBwdArgs<T, P> args) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  constexpr int E = VPT * V;  // elements per thread
  constexpr int RPB = NT / TPRW;
  constexpr int SLICE = E * TPRW;
  constexpr int SLOT = 2 * VPT + 1;  // 16-byte slots per thread and stage
  constexpr bool DWS = rms_row_dw_smem<NT, TPRW, MB>();
  static_assert(S >= 1 && S <= 4, "1 to 4 stages");
  static_assert(sizeof(A) == 4 && E % 4 == 0, "fp32 / fp16 / bf16 only");
  __shared__ A s_red[NT / 32];
  uint4* const ring = dynamic_smem<uint4>();
  // Shared-dw mode: this thread's partial, E / 4 float4 strided by NT.
  float4* const sdw = reinterpret_cast<float4*>(ring + (S > 1 ? S * NT * SLOT : 0)) + threadIdx.x;

  const int tid = threadIdx.x;
  const int lt = tid % TPRW;
  const int rg = tid / TPRW;
  const int N = args.N;
  // Every pack is 16-byte aligned and wholly in or out of the row (N % V ==
  // 0: the launcher takes this kernel only then); packs past N (the table
  // entry holds up to TPRW * VPT) read as zeros and are not written.
  const bool want_dw = args.partial != nullptr;
  bool pin[VPT];
#pragma unroll
  for (int i = 0; i < VPT; ++i) pin[i] = (i * TPRW + lt) * V < N;

  A wf[E];  // w as A, for the block's whole life (ones without a weight)
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    A wv[V];
    load_params<T, P, A>(args.w, pin[i] ? (i * TPRW + lt) * V : 0, args.wvec != 0, V, wv);
#pragma unroll
    for (int k = 0; k < V; ++k) wf[i * V + k] = wv[k];
  }
  A dwr[DWS ? 1 : E];
  if constexpr (DWS) {
#pragma unroll
    for (int j = 0; j < E / 4; ++j) sdw[j * NT] = make_float4(0.f, 0.f, 0.f, 0.f);
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e) dwr[e] = A(0);
  }

  // Row groups fit an int (M < 2^31): 32-bit loop state, 64-bit addresses.
  const int groups = static_cast<int>((static_cast<long long>(args.M) + RPB - 1) / RPB);
  const int first = blockIdx.x, stride = gridDim.x;
  auto row_of = [&](long long grp) { return grp * RPB + rg; };
  auto issue = [&](long long grp, int s) {
    const long long row = row_of(grp);
    const bool ok = grp < groups && row < args.M;
    const long long r = ok ? row : 0;
    rms_row_issue<T, VPT>(ring + (static_cast<long long>(s) * NT + tid) * SLOT,
                          args.x + r * args.ldx, args.dy + r * static_cast<long long>(N),
                          args.rstd + r, ok, lt, TPRW, N);
  };
  if constexpr (S > 1) {
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      issue(static_cast<long long>(first) + s * stride, s);
      cp_async_commit();
    }
  }

  int stage = 0;  // k % S for row group k of this block (a counter: one register less than k)
  for (int grp = first; grp < groups; grp += stride, stage = stage + 1 == S ? 0 : stage + 1) {
    const long long row = row_of(grp);
    const bool row_ok = row < args.M;
    const long long r0 = row_ok ? row : 0;
    uint4 xk[VPT], gk[VPT];
    A r;
    if constexpr (S > 1) {
      // Row group k + S - 1 into the stage that row group k - 1 used (its
      // values were consumed, in registers, before this point).
      issue(static_cast<long long>(grp) + (S - 1) * stride, stage == 0 ? S - 1 : stage - 1);
      cp_async_commit();
      cp_async_wait<S - 1>();  // row group k's copies have landed
      __syncwarp();            // lane 0's rstd copy, visible to the warp
      const uint4* slot = ring + (stage * NT + tid) * SLOT;
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        xk[i] = slot[i];
        gk[i] = slot[VPT + i];
      }
      // Lane 0's slot; it is rewritten only after every lane has used r (the
      // row sum's warp shuffles come first).
      r = *reinterpret_cast<const A*>(ring + (stage * NT + (tid & ~31)) * SLOT + 2 * VPT);
    } else {
      r = row_ok ? args.rstd[row] : A(0);
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int e0 = (i * TPRW + lt) * V;
        const bool in = row_ok && pin[i];
        xk[i] = in ? ld16<Ld::kNoL1>(args.x + r0 * args.ldx + e0) : make_uint4(0u, 0u, 0u, 0u);
        gk[i] = in ? ld16<Ld::kNoL1>(args.dy + r0 * N + e0) : make_uint4(0u, 0u, 0u, 0u);
      }
    }
    // xhat = x * rstd and g = dy * w are formed twice, before and after the
    // row sum, instead of being held across it: 32 fewer live registers.
    A sgx = A(0);  // sum over the row of (dy * w) * xhat
    A dwv[E];      // dy * xhat, this row's dw terms
#pragma unroll
    for (int i = 0; i < VPT; ++i)
#pragma unroll
      for (int k2 = 0; k2 < V; ++k2) {
        const int e = i * V + k2;
        const A dyv = Elem<T>::get(gk[i], k2);
        const A xh = Elem<T>::get(xk[i], k2) * r;
        sgx += (dyv * wf[e]) * xh;
        dwv[e] = dyv * xh;  // rows past M hold zeros: they add nothing
      }
    if constexpr (DWS) {
#pragma unroll
      for (int j = 0; j < E / 4; ++j) {
        float4 d = sdw[j * NT];
        d.x += dwv[4 * j];
        d.y += dwv[4 * j + 1];
        d.z += dwv[4 * j + 2];
        d.w += dwv[4 * j + 3];
        sdw[j * NT] = d;
      }
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e) dwr[e] += dwv[e];
    }
    const A c = rms_row_sum<NT, TPRW>(sgx, s_red) / static_cast<A>(N);
    if (row_ok) {
      T* dxr = args.dx + row * static_cast<long long>(N);
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        if (!pin[i]) continue;
        A out[V];
        // rstd * (g - xhat * mean(g * xhat)), as in the eager reference.
#pragma unroll
        for (int k2 = 0; k2 < V; ++k2) {
          const A xh = Elem<T>::get(xk[i], k2) * r;
          const A g = Elem<T>::get(gk[i], k2) * wf[i * V + k2];
          out[k2] = r * (g - xh * c);
        }
        store_pack<T>(dxr + (i * TPRW + lt) * V, out, true, V);
      }
    }
  }
  if constexpr (S > 1) cp_async_wait<0>();  // the ring's last (empty) copies

  if (want_dw) {
    A* gdw = args.partial + static_cast<long long>(blockIdx.x) * N;
    if constexpr (RPB == 1) {
      // One row slot: each thread owns its columns, V consecutive ones per
      // pack, written 16 bytes at a time (partials rows are N floats, N % V
      // == 0).  With scalar stores a fifth of the kernel's L2 store sectors
      // were 4-byte writes (ncu: 26.3 of 32 bytes per sector used), and the
      // kernel took 28.4 us at (2048, 4096) bf16 against 19.4 us now.
#pragma unroll
      for (int i = 0; i < VPT; ++i)
        if (pin[i]) {
#pragma unroll
          for (int q = 0; q < V / 4; ++q) {
            const int e = i * V + 4 * q;
            float4 d;
            if constexpr (DWS)
              d = sdw[(e / 4) * NT];
            else
              d = make_float4(dwr[e], dwr[e + 1], dwr[e + 2], dwr[e + 3]);
            *reinterpret_cast<float4*>(gdw + (i * TPRW + lt) * V + 4 * q) = d;
          }
        }
    } else {
      static_assert(!DWS, "shared-dw mode has one row slot");
      A* s_dw = dynamic_smem<A>();  // the ring's space: every copy has landed
      __syncthreads();              // every thread is past its last ring read
#pragma unroll
      for (int e = 0; e < E; ++e) s_dw[rg * SLICE + e * TPRW + lt] = dwr[e];
      __syncthreads();
      for (int idx = tid; idx < SLICE; idx += NT) {
        const int l = idx % TPRW, e = idx / TPRW;
        const int col = ((e / V) * TPRW + l) * V + (e % V);
        if (col >= N) continue;
        A s = A(0);
#pragma unroll
        for (int g2 = 0; g2 < RPB; ++g2) s += s_dw[g2 * SLICE + idx];
        gdw[col] = s;
      }
    }
  }
}

}  // namespace normk
