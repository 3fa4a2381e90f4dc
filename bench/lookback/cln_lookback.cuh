// Cumulative layer norm forward: one register tile per block, the cross-tile
// prefix by a decoupled look-back (Merrill & Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016), flags tagged with a launch
// epoch kept on the device so that no workspace is ever zeroed.
// Framework-free (norm_common.cuh).
//
// Why a third design.  The streaming kernels (cln_stream.cuh) and the
// register-tile kernels (cln_kernels.cuh) reduce a tile's exclusive prefix in
// a fixed order from groups of published words (bitwise deterministic), and
// zero their flag words with an extra kernel before every call.  Here:
//   * every tile publishes its aggregate (count implied, mean, M2) and, once
//     it knows its exclusive prefix, its inclusive prefix, in one 16-byte
//     record {mean, M2, status, 0} (one access: 16-byte aligned vector
//     accesses are whole, as CUB's tile descriptors rely on);
//   * a tile's scan warp reads up to 32 predecessors' records at once and
//     folds them back to the nearest inclusive one: the wait is for the
//     predecessors' loads to land, never for a chain of prefixes;
//   * status = 4 * epoch + kind, epoch read from the control word at the
//     start and advanced by the last block to finish: a record of an earlier
//     launch is never taken for this one's, with no memset and no extra
//     launch, also under CUDA-graph replay;
//   * the tile (BT frames x all C channels, C <= P * RPP) is held raw in
//     registers (16-byte packs), two passes over the registers give each
//     frame's mean and M2 (no E[x^2] - E[x]^2), and the output is written
//     from the same registers.
// The prefix folds depend on which predecessors had published an inclusive
// prefix when a tile looked, so outputs can differ in the last bits from run
// to run (as a CUB float scan's do); the counts are exact integers.
#pragma once

#include "norm_common.cuh"

namespace normk {
namespace lb {

constexpr unsigned kAgg = 1u;
constexpr unsigned kIncl = 2u;

// Control words at the start of the workspace: [0] the last finished
// launch's epoch, [1] blocks finished in the current launch.  Zeroed once when
// the workspace is allocated, never again.
constexpr int kCtlWords = 4;  // 16 bytes: the records after them stay 16-byte aligned

struct FwdArgs {
  const void* x;
  void* y;
  const void* gamma;  // P* or nullptr
  const void* beta;   // P* or nullptr
  float* mean;        // (B, T)
  float* rstd;        // (B, T)
  float* m2_last;     // (B,)
  const long long* count0;  // (B,) or nullptr: values before this chunk
  const float* mean0;       // (B,) or nullptr
  const float* m20;         // (B,) or nullptr
  unsigned* ctl;            // kCtlWords control words, then the records
  uint4* recs;              // B * ntt records
  int B, C, T, ntt;
  float eps;
  // Measurement only (bench/lookback_proto.cu): bit 0 no look-back (every
  // tile takes the identity prefix: wrong outputs), bit 1 no retirement
  // (epoch from `epoch`), bit 2 no statistics at all (load, store), bit 3
  // no scan warp (each frame's own mean and M2 as its statistics), bit 4 no
  // second pass (M2 = 0), bit 5 no mean / rstd stores.
  int diag;
  unsigned epoch;
};

__device__ __forceinline__ uint4 ld_rec(const uint4* p) {
  uint4 r;
  asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p)
               : "memory");
  return r;
}
__device__ __forceinline__ void st_rec(uint4* p, float m, float M, unsigned status) {
  asm volatile("st.relaxed.gpu.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p),
               "r"(__float_as_uint(m)), "r"(__float_as_uint(M)), "r"(status), "r"(0u)
               : "memory");
}
__device__ __forceinline__ unsigned ld_ctl(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The launch's epoch (block-uniform, from shared memory) and its retirement:
// the last block to finish stores it as the control word, so the next launch
// in the stream takes epoch + 1.  Every block reads the word before it
// counts itself finished, so none of this launch reads the new value.
__device__ __forceinline__ void retire(unsigned* ctl, unsigned epoch) {
  __threadfence();
  const unsigned done = atomicAdd(ctl + 1, 1u);
  if (done == gridDim.x - 1) {
    atomicExch(ctl + 1, 0u);
    atomicExch(ctl + 0, epoch);
  }
}

// Reduce V per-frame partials over the rows of the block into out[BT] (a
// fixed order: a butterfly within the warp, then the warps in order).
template <int TPR, int V, int NW>
__device__ __forceinline__ void frame_reduce(float (&s)[V], float (*red)[TPR * V], float* out) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
#pragma unroll
  for (int o = TPR; o < 32; o <<= 1)
#pragma unroll
    for (int k = 0; k < V; ++k) s[k] += __shfl_xor_sync(kFullMask, s[k], o);
  if (lane < TPR) {
#pragma unroll
    for (int k = 0; k < V; ++k) red[warp][lane * V + k] = s[k];
  }
  __syncthreads();
  if (tid < TPR * V) {
    float t = 0.f;
#pragma unroll
    for (int w = 0; w < NW; ++w) t += red[w][tid];
    out[tid] = t;
  }
  __syncthreads();
}

// The exclusive prefix (count, mean, M2) of tile `it` of sequence b: fold the
// records of tiles it-1, it-2, ... (32 per round, one per lane) back to the
// nearest inclusive one.  Called by one whole warp; every lane returns it.
__device__ __forceinline__ void look_back(const uint4* recs, int B, int b, int it, long long tile_n,
                                          long long n0, unsigned ep4, long long& pn, float& pm,
                                          float& pM) {
  const int lane = threadIdx.x & 31;
  pn = 0;
  pm = 0.f;
  pM = 0.f;
  for (int j = it - 1;; j -= 32) {
    const int jj = j - lane;
    long long rn = 0;
    float rm = 0.f, rM = 0.f;
    bool incl = true;  // lanes before the sequence: identity (tile 0 is always inclusive)
    if (jj >= 0) {
      const uint4* p = recs + static_cast<size_t>(jj) * B + b;
      uint4 r = ld_rec(p);
      while (r.z != ep4 + kAgg && r.z != ep4 + kIncl) r = ld_rec(p);
      incl = r.z == ep4 + kIncl;
      rm = __uint_as_float(r.x);
      rM = __uint_as_float(r.y);
      rn = incl ? n0 + tile_n * (jj + 1) : tile_n;
    }
    const unsigned m = __ballot_sync(kFullMask, incl);
    const int stop = m ? __ffs(m) - 1 : 31;
    if (lane > stop) rn = 0;
    // Ordered fold: lane l holds tile j - l, so a higher lane is earlier.
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const long long on = __shfl_down_sync(kFullMask, rn, o);
      const float om = __shfl_down_sync(kFullMask, rm, o);
      const float oM = __shfl_down_sync(kFullMask, rM, o);
      if (lane + o < 32) chan_combine_i(on, om, oM, rn, rm, rM, rn, rm, rM);
    }
    rn = __shfl_sync(kFullMask, rn, 0);
    rm = __shfl_sync(kFullMask, rm, 0);
    rM = __shfl_sync(kFullMask, rM, 0);
    chan_combine_i(rn, rm, rM, pn, pm, pM, pn, pm, pM);
    if (m) return;
  }
}

// T: element type (float / __half / __nv_bfloat16).  P: parameter type (T or
// float).  TPR threads per tile row (16-byte packs per row), NT threads, P_
// packs per thread (rows C <= P_ * NT / TPR), MINB blocks per SM wanted.
template <typename T, typename PT, int TPR, int NT, int PK, int MINB>
__global__ void __launch_bounds__(NT, MINB) cln_lb_fwd_kernel(const FwdArgs a) {
  constexpr int V = PackInfo<T>::V;
  constexpr int BT = TPR * V;
  constexpr int RPP = NT / TPR;
  constexpr int NW = NT / 32;
  constexpr int FPL = BT / 32;
  static_assert(TPR <= 32 && 32 % TPR == 0, "a tile row within one warp");
  static_assert(BT % 32 == 0, "whole frames per scan lane");
  __shared__ float red[NW][BT];
  __shared__ float s_mean[BT];  // frame means, then mu_t
  __shared__ float s_M[BT];     // frame M2, then rstd_t
  __shared__ float s_g[PK * RPP];
  __shared__ float s_b[PK * RPP];
  __shared__ unsigned s_ep4;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int row = tid / TPR, vc = tid % TPR;
  const int B = a.B, C = a.C, T_ = a.T;
  const int b = static_cast<int>(blockIdx.x) % B;
  const int it = static_cast<int>(blockIdx.x) / B;
  const int t0 = it * BT;
  const int nvalid = min(BT, T_ - t0);
  const int tf = t0 + vc * V;
  const int nv = max(0, min(V, T_ - tf));
  // From tf, not `nv == V`: with that form (nvcc 13.0, sm_90) a thread whose pack starts at
  // T (nv = 0, the last tile of an fp32 chunk with T % 4 == 0) took the 16-byte path and
  // wrote the next row's first pack (NOTES 42.2).
  const bool vec = (T_ % V == 0) && tf + V <= T_;
  const size_t base = static_cast<size_t>(b) * C * T_ + tf;
  const T* xb = static_cast<const T*>(a.x) + base;

  uint4 d[PK];
#pragma unroll
  for (int p = 0; p < PK; ++p) {
    const int c = p * RPP + row;
    d[p] = make_uint4(0u, 0u, 0u, 0u);
    if (c < C) d[p] = load_pack<T, Ld::kNoL1>(xb + static_cast<size_t>(c) * T_, vec, nv);
  }
  if (tid == 0) s_ep4 = ((a.diag & 2) ? a.epoch : ld_ctl(a.ctl) + 1u) * 4u;
  if (a.diag & 4) {
    T* yb = static_cast<T*>(a.y) + base;
#pragma unroll
    for (int p = 0; p < PK; ++p) {
      const int c = p * RPP + row;
      if (c < C && vec) *reinterpret_cast<uint4*>(yb + static_cast<size_t>(c) * T_) = d[p];
    }
    return;
  }
  for (int c = tid; c < C; c += NT) {
    s_g[c] = a.gamma ? load_param<PT, float>(static_cast<const PT*>(a.gamma), c) : 1.f;
    s_b[c] = a.beta ? load_param<PT, float>(static_cast<const PT*>(a.beta), c) : 0.f;
  }

  // Pass 1: the frame sums, then means.
  float s[V];
#pragma unroll
  for (int k = 0; k < V; ++k) s[k] = 0.f;
#pragma unroll
  for (int p = 0; p < PK; ++p)
#pragma unroll
    for (int k = 0; k < V; ++k) s[k] += Elem<T>::get(d[p], k);
  frame_reduce<TPR, V, NW>(s, red, s_mean);
  if (tid < BT) s_mean[tid] = s_mean[tid] / static_cast<float>(C);
  __syncthreads();
  // Pass 2: the frame M2 about the frame mean.
  if (!(a.diag & 16)) {
    float mf[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      mf[k] = s_mean[vc * V + k];
      s[k] = 0.f;
    }
#pragma unroll
    for (int p = 0; p < PK; ++p) {
      if (p * RPP + row < C) {
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const float dl = Elem<T>::get(d[p], k) - mf[k];
          s[k] = fmaf(dl, dl, s[k]);
        }
      }
    }
  }
  if (!(a.diag & 16)) frame_reduce<TPR, V, NW>(s, red, s_M);
  else if (tid < BT) s_M[tid] = float(C);

  if (a.diag & 8) {
    if (tid < BT) {
      const float r = 1.f / sqrtf(s_M[tid] / float(C) + a.eps);
      s_M[tid] = r;
      if (!(a.diag & 32) && tid < nvalid) {
        a.mean[static_cast<size_t>(b) * T_ + t0 + tid] = s_mean[tid];
        a.rstd[static_cast<size_t>(b) * T_ + t0 + tid] = r;
      }
    }
  } else if (warp == 0) {
    const unsigned ep4 = s_ep4;
    const float Cf = static_cast<float>(C);
    // In-tile inclusive scan: lane l owns frames l*FPL .. l*FPL+FPL-1.
    float ln[FPL], lm[FPL], lM[FPL];
    float n = 0.f, m = 0.f, M = 0.f;
#pragma unroll
    for (int j = 0; j < FPL; ++j) {
      const int f = lane * FPL + j;
      chan_combine(n, m, M, f < nvalid ? Cf : 0.f, s_mean[f], s_M[f], n, m, M);
      ln[j] = n;
      lm[j] = m;
      lM[j] = M;
    }
    long long wn = static_cast<long long>(n);  // whole counts: C * frames <= C * BT
    float wm = m, wM = M;
    chan_warp_scan_i(wn, wm, wM);
    float en = static_cast<float>(__shfl_up_sync(kFullMask, wn, 1));
    float em = __shfl_up_sync(kFullMask, wm, 1);
    float eM = __shfl_up_sync(kFullMask, wM, 1);
    if (lane == 0) en = em = eM = 0.f;
    const float am = __shfl_sync(kFullMask, wm, 31);
    const float aM = __shfl_sync(kFullMask, wM, 31);
    const long long tile_n = static_cast<long long>(C) * BT;
    const long long n0 = a.count0 ? a.count0[b] : 0;
    long long pn;
    float pm, pM;
    uint4* rec = a.recs + static_cast<size_t>(it) * a.B + b;
    if (it == 0 || (a.diag & 1)) {
      pn = n0;
      pm = n0 ? a.mean0[b] : 0.f;
      pM = n0 ? a.m20[b] : 0.f;
    } else {
      if (lane == 0) st_rec(rec, am, aM, ep4 + kAgg);
      look_back(a.recs, a.B, b, it, tile_n, n0, ep4, pn, pm, pM);
    }
    if (lane == 0 && it + 1 < a.ntt) {
      long long qn;
      float qm, qM;
      chan_combine_i(pn, pm, pM, tile_n, am, aM, qn, qm, qM);
      st_rec(rec, qm, qM, ep4 + kIncl);
    }
    // Every frame's statistics: prefix (+) lane exclusive (+) own frames.
    float* gmean = a.mean + static_cast<size_t>(b) * T_ + t0;
    float* grstd = a.rstd + static_cast<size_t>(b) * T_ + t0;
#pragma unroll
    for (int j = 0; j < FPL; ++j) {
      const int f = lane * FPL + j;
      float fn, fm, fM;
      chan_combine(en, em, eM, ln[j], lm[j], lM[j], fn, fm, fM);
      long long tn;
      float tm, tM;
      chan_combine_i(pn, pm, pM, static_cast<long long>(fn), fm, fM, tn, tm, tM);
      const float var = tM / static_cast<float>(tn);
      const float r = 1.f / sqrtf(var + a.eps);
      s_mean[f] = tm;
      s_M[f] = r;
      if (f < nvalid && !(a.diag & 32)) {
        gmean[f] = tm;
        grstd[f] = r;
        if (it + 1 == a.ntt && f == nvalid - 1) a.m2_last[b] = tM;
      }
    }
  }
  __syncthreads();

  // Output from the registers.
  float mu[V], rs[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    mu[k] = s_mean[vc * V + k];
    rs[k] = s_M[vc * V + k];
  }
  T* yb = static_cast<T*>(a.y) + base;
#pragma unroll
  for (int p = 0; p < PK; ++p) {
    const int c = p * RPP + row;
    if (c < C) {
      const float gm = s_g[c], bt = s_b[c];
      float o[V];
#pragma unroll
      for (int k = 0; k < V; ++k) o[k] = fmaf((Elem<T>::get(d[p], k) - mu[k]) * rs[k], gm, bt);
      store_pack<T>(yb + static_cast<size_t>(c) * T_, o, vec, nv);
    }
  }
  if (tid == 0 && !(a.diag & 2)) retire(a.ctl, s_ep4 >> 2);
}

}  // namespace lb
}  // namespace normk
