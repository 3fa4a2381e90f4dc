// cLN forward with a whole sequence resident in shared memory: one block per
// batch item, no cross-block traffic.  For short sequences, where the other
// kernel families pay more for their cross-tile machinery (a workspace
// memset, published tile aggregates, a cooperative persistent grid) than for
// the data: the seed shape (80, 64, 301) fp32 is 77 KB per sequence, 6.2 MB
// in all.  Framework-free (see norm_common.cuh).
//
// Block b (kResidentThreads threads):
//   1. copies x[b] (C x L contiguous elements) into shared memory with
//      cp.async (16-byte copies when C * L is a multiple of a pack and x is
//      16-byte aligned; element copies otherwise);
//   2. per frame t (thread t, t + NT, ...): the mean over the C channels, then
//      M2 about it (exact two-pass statistics from shared memory, as the
//      streaming kernels do);
//   3. the inclusive scan over the frames with the Chan combine and exact
//      integer counts: thread i takes the run of frames [i * F, (i + 1) * F),
//      F = ceil(L / NT); thread totals are scanned by shuffles within a warp,
//      the warp totals by warp 0, and each thread then walks its run again
//      from its exclusive prefix (the streaming state (count0, mean0, m20)
//      first), writing mean / rstd (and m2_last at t = L - 1);
//   4. y = (x - mu_t) * rstd_t * gamma + beta, packs in memory order (the
//      same rounding order as the other kernels).
// The summation order depends only on (C, L): bitwise reproducible.
#pragma once

#include "cln_kernels.cuh"

namespace normk {

constexpr int kResidentThreads = 512;

// Dynamic shared memory of one resident block: the sequence (padded to 16
// bytes), then mu[L] and m2[L] (A), then gamma[C] and beta[C] (A).
template <typename T>
__host__ __device__ constexpr long long resident_seq_bytes(long long C, long long L) {
  return (C * L * static_cast<long long>(sizeof(T)) + 15) / 16 * 16;
}
template <typename T>
__host__ __device__ constexpr long long resident_smem_bytes(long long C, long long L) {
  return resident_seq_bytes<T>(C, L) + 2 * (L + C) * static_cast<long long>(sizeof(acc_t<T>));
}

template <typename T, typename P>
__global__ void __launch_bounds__(kResidentThreads, 1)
    cln_fwd_resident_kernel(const ClnFwdArgs<T, P> args) {
  pdl_chain_start();  // launched with `pdl`: nothing is read before the launch before ends
  using A = acc_t<T>;
  constexpr int NT = kResidentThreads, NW = NT / 32;
  constexpr int V = PackInfo<T>::V;
  __shared__ long long s_wn[NW];
  __shared__ A s_wm[NW], s_wM[NW];

  const int C = args.C, L = args.L;
  const int n = C * L;  // fits: the sequence is in shared memory
  const int b = blockIdx.x;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  T* const sx = dynamic_smem<T>();
  A* const s_mu = reinterpret_cast<A*>(reinterpret_cast<unsigned char*>(sx) +
                                       resident_seq_bytes<T>(C, L));
  A* const s_m2 = s_mu + L;
  A* const s_gm = s_m2 + L;
  A* const s_bt = s_gm + C;
  const T* const xb = args.x + static_cast<long long>(b) * n;
  T* const yb = args.y + static_cast<long long>(b) * n;
  const bool vec = args.vec != 0;

  // 1. The sequence, every copy in flight at once.
  if (vec) {
    for (int e = tid * V; e < n; e += NT * V) cp_async<16>(sx + e, xb + e, true);
  } else if constexpr (sizeof(T) >= 4) {
    for (int e = tid; e < n; e += NT) cp_async<sizeof(T)>(sx + e, xb + e, true);
  } else {  // cp.async has no 2-byte copy
    for (int e = tid; e < n; e += NT) sx[e] = xb[e];
  }
  cp_async_commit();
  for (int c = tid; c < C; c += NT) {
    s_gm[c] = args.gamma ? load_param<P, A>(args.gamma, c) : A(1);
    s_bt[c] = args.beta ? load_param<P, A>(args.beta, c) : A(0);
  }
  cp_async_wait<0>();
  __syncthreads();

  // 2. Frame statistics (consecutive threads read consecutive frames of a
  //    channel row: no bank conflicts).
  const A inv_c = A(1) / static_cast<A>(C);
  const bool shift = kShiftFrameSums<T> && args.shift != 0;  // the whole sequence: frame 0 on
  for (int t = tid; t < L; t += NT) {
    // The shift (kShiftFrameSums) in the first C frames: the frame's channel-0 value.
    const A k0 = shift && t < C ? Elem<T>::to_acc(sx[t]) : A(0);
    A s = A(0);
    for (int c = 0; c < C; ++c) s += Elem<T>::to_acc(sx[c * L + t]) - k0;
    const A mf = k0 + s * inv_c;
    A q = A(0);
    for (int c = 0; c < C; ++c) {
      const A d = Elem<T>::to_acc(sx[c * L + t]) - mf;
      q += d * d;
    }
    s_mu[t] = mf;
    s_m2[t] = q;
  }
  __syncthreads();

  // 3. The scan over the frames.
  const int F = (L + NT - 1) / NT;
  const int f0 = tid * F;
  const int f1 = f0 + F < L ? f0 + F : L;
  long long tn = 0;
  A tm = A(0), tM = A(0);
  for (int t = f0; t < f1; ++t)
    chan_combine_i(tn, tm, tM, static_cast<long long>(C), s_mu[t], s_m2[t], tn, tm, tM);
  // Inclusive within the warp.
  long long in = tn;
  A im = tm, iM = tM;
  chan_warp_scan_i(in, im, iM);
  if (lane == 31) {
    s_wn[warp] = in;
    s_wm[warp] = im;
    s_wM[warp] = iM;
  }
  // This thread's exclusive prefix within its warp.
  long long en = __shfl_up_sync(kFullMask, in, 1);
  A em = __shfl_up_sync(kFullMask, im, 1);
  A eM = __shfl_up_sync(kFullMask, iM, 1);
  if (lane == 0) en = 0, em = A(0), eM = A(0);
  __syncthreads();
  if (warp == 0) {  // exclusive scan of the warp totals, the state first
    const long long cnt0 = args.count0 ? args.count0[b] : 0LL;
    long long wn = 0;
    A wm = A(0), wM = A(0);
    if (lane == 0 && cnt0 > 0) {
      wn = cnt0;
      wm = args.mean0 ? args.mean0[b] : A(0);
      wM = args.m20 ? args.m20[b] : A(0);
    } else if (lane > 0 && lane <= NW - 1) {
      wn = s_wn[lane - 1];
      wm = s_wm[lane - 1];
      wM = s_wM[lane - 1];
    }
    chan_warp_scan_i(wn, wm, wM);
    __syncwarp();
    if (lane < NW) {  // the state (+) warps 0 .. lane - 1
      s_wn[lane] = wn;
      s_wm[lane] = wm;
      s_wM[lane] = wM;
    }
  }
  __syncthreads();
  long long rn;
  A rm, rM;
  chan_combine_i(s_wn[warp], s_wm[warp], s_wM[warp], en, em, eM, rn, rm, rM);
  for (int t = f0; t < f1; ++t) {
    chan_combine_i(rn, rm, rM, static_cast<long long>(C), s_mu[t], s_m2[t], rn, rm, rM);
    s_m2[t] = cln_frame_out(args, b, t, rn, rm, rM);
    s_mu[t] = rm;
  }
  __syncthreads();

  // 4. The output, in memory order.
  if (vec) {
    for (int e0 = tid * V; e0 < n; e0 += NT * V) {
      int c = e0 / L, t = e0 - c * L;
      const uint4 u = *reinterpret_cast<const uint4*>(sx + e0);
      A y[V];
#pragma unroll
      for (int k = 0; k < V; ++k) {
        y[k] = (Elem<T>::get(u, k) - s_mu[t]) * s_m2[t] * s_gm[c] + s_bt[c];
        if (++t == L) t = 0, ++c;
      }
      store_pack<T>(yb + e0, y, true, V);
    }
  } else {
    for (int e = tid; e < n; e += NT) {
      const int c = e / L, t = e - c * L;
      const A v = (Elem<T>::to_acc(sx[e]) - s_mu[t]) * s_m2[t] * s_gm[c] + s_bt[c];
      yb[e] = Elem<T>::from_acc(v);
    }
  }
}

}  // namespace normk
