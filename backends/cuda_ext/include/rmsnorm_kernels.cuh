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
// blocks in a fixed order (reduce_kernels.cuh): deterministic dw.  Rows read
// in one chunk have two optional schedules (MODE bits of rms_bwd_kernel,
// compiled where the register budget holds them, rms_bwd_mode_fits): the
// next row group loaded one row ahead in registers (kBwdAhead), and the dw
// partial kept in registers for all of the block's rows, written to shared
// memory once at the end (kBwdDwReg) instead of a shared-memory
// read-modify-write per element and row.
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

// rms_bwd_kernel's MODE bits.
constexpr int kBwdAhead = 1;  // the next row group's x and dy loaded during this one
constexpr int kBwdDwReg = 2;  // dw accumulated in registers over the block's rows

// Whether MODE fits the register budget of __launch_bounds__(NT, MB) next
// to the row's packs (2 tensors x VPT packs x 4 registers, twice with
// kBwdAhead) and the rest (~48, measured with ptxas for the plain kernel):
// kBwdDwReg adds VPT * V accumulators.  fp64 (~80 registers for one row):
// the plain kernel only.
template <typename T, int NT, int VPT, int MB, int MODE>
__host__ __device__ constexpr bool rms_bwd_mode_fits() {
  if (MODE == 0) return true;
  if (sizeof(T) > 4) return false;
  const int cap = 65536 / (NT * MB) > 255 ? 255 : 65536 / (NT * MB);
  const int regs = 8 * VPT * ((MODE & kBwdAhead) ? 2 : 1) +
                   ((MODE & kBwdDwReg) ? VPT * PackInfo<T>::V : 0) + 48;
  return regs <= cap;
}

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

// x and dy packs of chunk `ch` of one row (zeros past the row's end or for a
// row past M).  H: the cache policy (read once: kNoL1; re-read: kCg).
template <typename T, int TPRW, int VPT, Ld H>
__device__ __forceinline__ void rms_bwd_load(const T* xr, const T* dyr, bool row_ok, int ch,
                                             int lt, int N, int vec, uint4 (&xk)[VPT],
                                             uint4 (&gk)[VPT]) {
  constexpr int V = PackInfo<T>::V;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int e0 = ((ch * TPRW * VPT) + i * TPRW + lt) * V;
    const int nv = N - e0;
    if (row_ok && nv > 0) {
      xk[i] = load_pack<T, H>(xr + e0, vec && nv >= V, nv);
      gk[i] = load_pack<T, H>(dyr + e0, vec && nv >= V, nv);
    } else {
      xk[i] = gk[i] = make_uint4(0u, 0u, 0u, 0u);
    }
  }
}

template <typename T, typename P, int NT, int TPRW, int VPT, int MB, int MODE>
__global__ void __launch_bounds__(NT, MB) rms_bwd_kernel(const RmsBwdArgs<T, P> args) {
  using A = acc_t<T>;
  constexpr int V = PackInfo<T>::V;
  constexpr int RPB = NT / TPRW;
  constexpr int CW = TPRW * VPT;
  constexpr int SLICE = VPT * V * TPRW;  // dw entries of one row group (smem mode)
  static_assert(rms_bwd_mode_fits<T, NT, VPT, MB, MODE>(), "MODE does not fit the registers");
  constexpr bool kAhead = (MODE & kBwdAhead) != 0;
  constexpr bool kDwReg = (MODE & kBwdDwReg) != 0;
  __shared__ A s_red[NT / 32];
  A* s_dw = dynamic_smem<A>();  // [RPB][VPT * V][TPRW] in smem mode

  const int tid = threadIdx.x;
  const int lt = tid % TPRW;
  const int rg = tid / TPRW;  // row within the block's group
  const int N = args.N;
  const bool once = args.nchunks == 1;
  const bool ahead = kAhead && once;
  const bool want_dw = args.partial != nullptr;
  const bool dw_smem = want_dw && args.dw_smem;
  const bool dwreg = kDwReg && once && dw_smem;
  A dwr[kDwReg ? VPT * V : 1];
#pragma unroll
  for (int i = 0; i < (kDwReg ? VPT * V : 1); ++i) dwr[i] = A(0);
  A* gdw = want_dw ? args.partial + static_cast<long long>(blockIdx.x) * N : nullptr;
  const long long ldy = N;

  if (dw_smem) {
    for (int i = tid; i < RPB * SLICE; i += NT) s_dw[i] = A(0);
    // Ordered before the first update by the barrier in rms_row_sum or below.
    __syncthreads();
  }

  const long long groups = (static_cast<long long>(args.M) + RPB - 1) / RPB;
  uint4 xk[VPT], gk[VPT];
  uint4 xn[kAhead ? VPT : 1], gn[kAhead ? VPT : 1];
  A rn = A(0);
  if constexpr (kAhead) {
    if (ahead && blockIdx.x < groups) {
      const long long row = static_cast<long long>(blockIdx.x) * RPB + rg;
      const bool ok = row < args.M;
      rms_bwd_load<T, TPRW, VPT, Ld::kNoL1>(args.x + (ok ? row : 0) * args.ldx,
                                            args.dy + (ok ? row : 0) * ldy, ok, 0, lt, N,
                                            args.vec, xk, gk);
      rn = ok ? args.rstd[row] : A(0);
    }
  }
  for (long long grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const long long row = grp * RPB + rg;
    const bool row_ok = row < args.M;
    const T* xr = args.x + (row_ok ? row : 0) * args.ldx;
    const T* dyr = args.dy + (row_ok ? row : 0) * ldy;
    T* dxr = args.dx + (row_ok ? row : 0) * ldy;
    A r;
    if constexpr (kAhead) {
      if (ahead) {
        r = rn;
        const long long nrow = (grp + gridDim.x) * RPB + rg;
        const bool nok = grp + gridDim.x < groups && nrow < args.M;
        if (grp + gridDim.x < groups) {
          rms_bwd_load<T, TPRW, VPT, Ld::kNoL1>(args.x + (nok ? nrow : 0) * args.ldx,
                                                args.dy + (nok ? nrow : 0) * ldy, nok, 0, lt,
                                                N, args.vec, xn, gn);
          rn = nok ? args.rstd[nrow] : A(0);
        }
      } else {
        r = row_ok ? args.rstd[row] : A(0);
      }
    } else {
      r = row_ok ? args.rstd[row] : A(0);
    }

    A sgx = A(0);  // sum over the row of g * xhat
    for (int ch = 0; ch < args.nchunks; ++ch) {
      if (!ahead) {
        if (once)
          rms_bwd_load<T, TPRW, VPT, Ld::kNoL1>(xr, dyr, row_ok, ch, lt, N, args.vec, xk, gk);
        else
          rms_bwd_load<T, TPRW, VPT, Ld::kCg>(xr, dyr, row_ok, ch, lt, N, args.vec, xk, gk);
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
            if (kDwReg && dwreg) {
              dwr[kDwReg ? i * V + k : 0] += dyv * xh;
            } else if (dw_smem) {
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
      if (!once) rms_bwd_load<T, TPRW, VPT, Ld::kCg>(xr, dyr, row_ok, ch, lt, N, args.vec, xk, gk);
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
    if constexpr (kAhead) {
      if (ahead) {
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
          xk[i] = xn[i];
          gk[i] = gn[i];
        }
      }
    }
  }

  if (dw_smem) {
    if constexpr (kDwReg) {
      if (dwreg) {
        // The rows' sums, in the layout of the shared-memory accumulation.
#pragma unroll
        for (int i = 0; i < VPT; ++i)
#pragma unroll
          for (int k = 0; k < V; ++k) s_dw[rg * SLICE + (i * V + k) * TPRW + lt] = dwr[i * V + k];
      }
    }
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

}  // namespace normk
