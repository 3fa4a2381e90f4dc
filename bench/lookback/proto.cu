// Standalone H200 measurement of the look-back cLN forward
// (bench/lookback/cln_lookback.cuh) before it is wired into the
// extension: checks every case against a float64 host reference, then times
// it (CUDA events, median of repeats, inputs rotated over copies that together
// exceed the L2) beside cudaMemcpy of the same bytes and of 1 GiB.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ibackends/cuda_ext/include -Ibench/lookback \
//        bench/lookback/proto.cu -o /tmp/lbp && /tmp/lbp
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../../backends/cuda_ext/emu/cln_ref.h"
#include "cln_lookback.cuh"

using namespace normk;

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                   \
                   cudaGetErrorString(e_));                                            \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

template <typename T>
float tof(T v);
template <>
float tof<float>(float v) { return v; }
template <>
float tof<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
T fromf(float v);
template <>
float fromf<float>(float v) { return v; }
template <>
__nv_bfloat16 fromf<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T, int TPR, int NT, int PK, int MINB>
struct Cfg {
  static constexpr int V = 16 / sizeof(T), BT = TPR * V, RPP = NT / TPR;
  static bool fits(int C) { return C <= PK * RPP && (PK == 1 || C > PK * RPP / 2); }
  static void launch(const lb::FwdArgs& a, cudaStream_t s) {
    lb::cln_lb_fwd_kernel<T, float, TPR, NT, PK, MINB><<<a.B * a.ntt, NT, 0, s>>>(a);
  }
  static int ntt(int T_) { return (T_ + BT - 1) / BT; }
  static void name(char* buf) { std::snprintf(buf, 64, "TPR%d NT%d PK%d BT%d", TPR, NT, PK, BT); }
};

struct Dev {
  std::vector<void*> ptrs;
  void* alloc(size_t n) {
    void* p;
    CK(cudaMalloc(&p, n));
    ptrs.push_back(p);
    return p;
  }
  ~Dev() {
    for (void* p : ptrs) cudaFree(p);
  }
};

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The float64 reference of the C++ checks (backends/cuda_ext/emu/cln_ref.h) for one
// sequence chunk of float inputs (the rounded T values), with gamma and beta, eps 1e-8.
static ClnRef reference(const std::vector<float>& x, const std::vector<float>& g,
                        const std::vector<float>& bt, int B, int C, int T_) {
  const std::vector<double> xd(x.begin(), x.end()), gd(g.begin(), g.end()),
      bd(bt.begin(), bt.end());
  return cln_fwd_ref(xd, &gd, &bd, B, C, T_, 1e-8, nullptr, nullptr, nullptr);
}

static double relerr(const std::vector<double>& ref, const std::vector<float>& out) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = out[i] - ref[i];
    if (!std::isfinite(out[i])) return INFINITY;
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

static float time_loop(int reps, int rot, cudaStream_t s, const std::function<void(int)>& f) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int r = 0; r < rot; ++r) f(r);  // warm
  std::vector<float> v;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0, s));
    for (int r = 0; r < rot; ++r) f(r);
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    v.push_back(ms * 1000.f / rot);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return median(v);
}

static double g_copy_gbps = 0;

// A plain grid-stride copy of 16-byte words: what a kernel copy reaches next to cudaMemcpy.
__global__ void copy16(const uint4* __restrict__ x, uint4* __restrict__ y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

template <typename T, typename Cf>
void run_case(int B, int C, int T_, float dc, bool check, bool timeit, bool stream_check) {
  if (!Cf::fits(C)) return;
  char nm[64];
  Cf::name(nm);
  const size_t N = static_cast<size_t>(B) * C * T_;
  const size_t bytes = N * sizeof(T);
  std::mt19937 rng(1234 + B * 7 + C * 13 + T_);
  std::normal_distribution<float> nd;
  std::vector<float> xf(N), g(C), bt(C);
  std::vector<T> xh(N);
  for (size_t i = 0; i < N; ++i) {
    xh[i] = fromf<T>(dc + nd(rng));
    xf[i] = tof<T>(xh[i]);
  }
  for (int c = 0; c < C; ++c) g[c] = 1.f + 0.1f * nd(rng), bt[c] = 0.1f * nd(rng);
  Dev dv;
  const int ntt = Cf::ntt(T_);
  const int rot = check ? 1 : std::max<int>(2, static_cast<int>((256ull << 20) / (2 * bytes) + 1));
  std::vector<T*> xs(rot), ys(rot);
  for (int r = 0; r < rot; ++r) {
    xs[r] = static_cast<T*>(dv.alloc(bytes));
    ys[r] = static_cast<T*>(dv.alloc(bytes));
    CK(cudaMemcpy(xs[r], xh.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(ys[r], 0xff, bytes));  // NaN poison
  }
  float* dg = static_cast<float*>(dv.alloc(C * 4));
  float* db = static_cast<float*>(dv.alloc(C * 4));
  CK(cudaMemcpy(dg, g.data(), C * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, bt.data(), C * 4, cudaMemcpyHostToDevice));
  float* dmean = static_cast<float*>(dv.alloc(static_cast<size_t>(B) * T_ * 4));
  float* drstd = static_cast<float*>(dv.alloc(static_cast<size_t>(B) * T_ * 4));
  float* dm2 = static_cast<float*>(dv.alloc(B * 4));
  long long* dcnt = static_cast<long long*>(dv.alloc(B * 8));
  float* dmean0 = static_cast<float*>(dv.alloc(B * 4));
  float* dm20 = static_cast<float*>(dv.alloc(B * 4));
  const size_t wsb = 16 + static_cast<size_t>(B) * (ntt + 1) * 16;
  unsigned* ws = static_cast<unsigned*>(dv.alloc(wsb));
  CK(cudaMemset(ws, 0, wsb));
  lb::FwdArgs a{};
  a.gamma = dg;
  a.beta = db;
  a.mean = dmean;
  a.rstd = drstd;
  a.m2_last = dm2;
  a.ctl = ws;
  a.recs = reinterpret_cast<uint4*>(ws + lb::kCtlWords);
  a.B = B, a.C = C, a.T = T_, a.ntt = ntt, a.eps = 1e-8f;
  cudaStream_t s = 0;
  if (check) {
    a.x = xs[0];
    a.y = ys[0];
    // Three launches: the epoch must move on (a stale record never counts).
    for (int rep = 0; rep < 3; ++rep) {
      CK(cudaMemset(ys[0], 0xff, bytes));
      Cf::launch(a, s);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
    }
    std::vector<T> yh(N);
    std::vector<float> yo(N), mo(static_cast<size_t>(B) * T_), ro(static_cast<size_t>(B) * T_),
        m2o(B);
    CK(cudaMemcpy(yh.data(), ys[0], bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(mo.data(), dmean, mo.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ro.data(), drstd, ro.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(m2o.data(), dm2, B * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < N; ++i) yo[i] = tof<T>(yh[i]);
    const ClnRef ref = reference(xf, g, bt, B, C, T_);
    const std::vector<double>&yr = ref.y, &mr = ref.mean, &rr = ref.rstd;
    std::printf("check %-5s (%d, %d, %d) dc %g [%s]: y %.2e mean %.2e rstd %.2e m2 %.2e\n",
                sizeof(T) == 4 ? "fp32" : "bf16", B, C, T_, dc, nm, relerr(yr, yo), relerr(mr, mo),
                relerr(rr, ro), relerr(ref.m2_last, m2o));
    if (stream_check && T_ > 3) {
      // Two chunks with the state between them: the same y as one call.
      const int T1 = T_ / 3;
      const int T2 = T_ - T1;
      std::vector<T> x1(static_cast<size_t>(B) * C * T1), x2(static_cast<size_t>(B) * C * T2);
      for (int b = 0; b < B; ++b)
        for (int c = 0; c < C; ++c)
          for (int t = 0; t < T_; ++t) {
            const T v = xh[(static_cast<size_t>(b) * C + c) * T_ + t];
            if (t < T1) x1[(static_cast<size_t>(b) * C + c) * T1 + t] = v;
            else x2[(static_cast<size_t>(b) * C + c) * T2 + t - T1] = v;
          }
      T* dx1 = static_cast<T*>(dv.alloc(x1.size() * sizeof(T)));
      T* dx2 = static_cast<T*>(dv.alloc(x2.size() * sizeof(T)));
      T* dy2 = static_cast<T*>(dv.alloc(x2.size() * sizeof(T)));
      T* dy1 = static_cast<T*>(dv.alloc(x1.size() * sizeof(T)));
      CK(cudaMemcpy(dx1, x1.data(), x1.size() * sizeof(T), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dx2, x2.data(), x2.size() * sizeof(T), cudaMemcpyHostToDevice));
      lb::FwdArgs a1 = a;
      a1.x = dx1, a1.y = dy1, a1.T = T1, a1.ntt = Cf::ntt(T1);
      Cf::launch(a1, s);
      std::vector<float> mlast(B);
      std::vector<long long> cnt(B, static_cast<long long>(C) * T1);
      CK(cudaDeviceSynchronize());
      for (int b = 0; b < B; ++b)
        CK(cudaMemcpy(&mlast[b], dmean + static_cast<size_t>(b) * T1 + T1 - 1, 4,
                      cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(dmean0, mlast.data(), B * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dm20, dm2, B * 4, cudaMemcpyDeviceToDevice));
      {
        std::vector<float> x1f(x1.size()), m2c(B);
        for (size_t i = 0; i < x1.size(); ++i) x1f[i] = tof<T>(x1[i]);
        const ClnRef ref1 = reference(x1f, g, bt, B, C, T1);
        CK(cudaMemcpy(m2c.data(), dm2, B * 4, cudaMemcpyDeviceToHost));
        std::vector<T> y1h(x1.size());
        std::vector<float> y1o(x1.size());
        CK(cudaMemcpy(y1h.data(), dy1, y1h.size() * sizeof(T), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < y1o.size(); ++i) y1o[i] = tof<T>(y1h[i]);
        std::printf("  chunk 1: y %.2e m2_last %.2e (b0 %g vs %g)\n", relerr(ref1.y, y1o),
                    relerr(ref1.m2_last, m2c), m2c[0], ref1.m2_last[0]);
      }
      CK(cudaMemcpy(dcnt, cnt.data(), B * 8, cudaMemcpyHostToDevice));
      lb::FwdArgs a2 = a;
      a2.x = dx2, a2.y = dy2, a2.T = T2, a2.ntt = Cf::ntt(T2);
      a2.count0 = dcnt, a2.mean0 = dmean0, a2.m20 = dm20;
      Cf::launch(a2, s);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      std::vector<T> y2(x2.size());
      CK(cudaMemcpy(y2.data(), dy2, y2.size() * sizeof(T), cudaMemcpyDeviceToHost));
      std::vector<double> ref2;
      std::vector<float> o2;
      for (int b = 0; b < B; ++b)
        for (int c = 0; c < C; ++c)
          for (int t = T1; t < T_; ++t) {
            ref2.push_back(yr[(static_cast<size_t>(b) * C + c) * T_ + t]);
            o2.push_back(tof<T>(y2[(static_cast<size_t>(b) * C + c) * T2 + t - T1]));
          }
      std::printf("  stream (%d + %d frames): second chunk y %.2e\n", T1, T2, relerr(ref2, o2));
      size_t worst = 0;
      for (size_t i = 0; i < o2.size(); ++i)
        if (std::fabs(o2[i] - ref2[i]) > std::fabs(o2[worst] - ref2[worst])) worst = i;
      std::printf("  worst at flat %zu (b %zu c %zu t %zu): %g vs %g\n", worst,
                  worst / (static_cast<size_t>(C) * T2), worst / T2 % C, worst % T2 + T1,
                  o2[worst], ref2[worst]);
      {
        int shown = 0;
        size_t bad = 0;
        for (size_t i = 0; i < o2.size(); ++i) {
          const double dd = std::fabs(o2[i] - ref2[i]);
          if (dd > 1e-3 * (1 + std::fabs(ref2[i]))) {
            ++bad;
            if (shown++ < 6) {
              const size_t bb = i / (static_cast<size_t>(C) * T2), cc = i / T2 % C, tt = i % T2;
              std::printf("    bad b %zu c %zu t %zu: %g vs %g (x %g, gamma %g beta %g)\n", bb, cc,
                          tt + T1, o2[i], ref2[i],
                          tof<T>(x2[(bb * C + cc) * T2 + tt]), g[cc], bt[cc]);
            }
          }
        }
        std::printf("    %zu of %zu elements off by more than 1e-3\n", bad, o2.size());
      }
      for (int bb = 0; bb < B; ++bb) {
        const size_t n2 = static_cast<size_t>(C) * T2;
        std::vector<double> rb(ref2.begin() + bb * n2, ref2.begin() + (bb + 1) * n2);
        std::vector<float> ob(o2.begin() + bb * n2, o2.begin() + (bb + 1) * n2);
        std::printf("    b %d: y %.2e\n", bb, relerr(rb, ob));
      }
      {
        std::vector<float> r2h(static_cast<size_t>(B) * T2), m2d(static_cast<size_t>(B) * T2);
        CK(cudaMemcpy(r2h.data(), drstd, r2h.size() * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(m2d.data(), dmean, m2d.size() * 4, cudaMemcpyDeviceToHost));
        for (int bb = 0; bb < B; ++bb)
          for (int t : {0, 1, 2, 31, 32, 100, T2 - 1})
            std::printf("    b %d t=%d: mean %g vs %g  rstd %g vs %g\n", bb, t + T1,
                        m2d[static_cast<size_t>(bb) * T2 + t],
                        mr[static_cast<size_t>(bb) * T_ + t + T1],
                        r2h[static_cast<size_t>(bb) * T2 + t],
                        rr[static_cast<size_t>(bb) * T_ + t + T1]);
      }
      std::vector<float> m2h(static_cast<size_t>(B) * T2);
      CK(cudaMemcpy(m2h.data(), dmean, m2h.size() * 4, cudaMemcpyDeviceToHost));
      for (int t : {0, 1, 31, 32, 33, T2 - 1})
        std::printf("    mean t=%d: %g vs %g\n", t + T1, m2h[t], mr[t + T1]);
    }
  }
  if (timeit) {
    const float cus = time_loop(20, rot, s, [&](int r) {
      CK(cudaMemcpyAsync(ys[r], xs[(r + 1) % rot], bytes, cudaMemcpyDeviceToDevice, s));
    });
    std::printf("time  %-5s (%d, %d, %d) [%s]: memcpy same bytes %.1f us = %.3f;",
                sizeof(T) == 4 ? "fp32" : "bf16", B, C, T_, nm, cus,
                2.0 * bytes / (cus * 1e3) / g_copy_gbps);
    const int diags[] = {0, 1, 2, 3, 3 | 32, 3 | 8, 3 | 16, 3 | 8 | 16 | 32, 4 | 2};
    const char* dn[] = {"full", "no-lookback", "no-retire", "no-lb-no-retire", "+no-stat-store",
                        "+no-scan", "+no-pass2", "+none-of-the-three", "load-store"};
    unsigned ep = 1000;
    for (int di = 0; di < 9; ++di) {
      const float us = time_loop(20, rot, s, [&](int r) {
        lb::FwdArgs ar = a;
        ar.x = xs[r];
        ar.y = ys[r];
        ar.diag = diags[di];
        ar.epoch = ++ep;
        Cf::launch(ar, s);
      });
      CK(cudaGetLastError());
      std::printf("  %s %.1f us (%.3f)", dn[di], us, 2.0 * bytes / (us * 1e3) / g_copy_gbps);
    }
    {
      // Does the load-store skeleton move every byte?  (Its time beat the copies in fp32.)
      CK(cudaMemset(ys[0], 0xff, bytes));
      lb::FwdArgs ar = a;
      ar.x = xs[0];
      ar.y = ys[0];
      ar.diag = 6;
      ar.epoch = ++ep;
      Cf::launch(ar, s);
      CK(cudaDeviceSynchronize());
      std::vector<T> yh(N);
      CK(cudaMemcpy(yh.data(), ys[0], bytes, cudaMemcpyDeviceToHost));
      size_t diff = 0;
      for (size_t i = 0; i < N; ++i) diff += std::memcmp(&yh[i], &xh[i], sizeof(T)) != 0;
      std::printf("  skeleton y != x at %zu of %zu;", diff, N);
    }
    const float kus = time_loop(20, rot, s, [&](int r) {
      copy16<<<1056, 512, 0, s>>>(reinterpret_cast<const uint4*>(xs[r]),
                                   reinterpret_cast<uint4*>(ys[r]), bytes / 16);
    });
    std::printf("  copy16-kernel %.1f us (%.3f)\n", kus, 2.0 * bytes / (kus * 1e3) / g_copy_gbps);
    // The next full launch must see a fresh epoch: diag launches never retire.
    CK(cudaMemset(ws, 0, wsb));
  }
}

template <typename T, typename... Cfs>
void all_cfgs(int B, int C, int T_, float dc, bool check, bool timeit, bool stream_check) {
  (run_case<T, Cfs>(B, C, T_, dc, check, timeit, stream_check), ...);
}

template <typename T>
void shape(int B, int C, int T_, float dc, bool check, bool timeit, bool stream_check = false);

template <>
void shape<float>(int B, int C, int T_, float dc, bool check, bool timeit, bool sc) {
  all_cfgs<float, Cfg<float, 8, 256, 1, 4>, Cfg<float, 8, 256, 2, 3>, Cfg<float, 8, 256, 4, 2>,
           Cfg<float, 8, 256, 8, 2>, Cfg<float, 8, 256, 16, 1>, Cfg<float, 8, 512, 8, 1>,
           Cfg<float, 16, 256, 4, 2>, Cfg<float, 16, 256, 8, 2>, Cfg<float, 16, 256, 16, 1>,
           Cfg<float, 32, 256, 16, 1>>(
      B, C, T_, dc, check, timeit, sc);
}
template <>
void shape<__nv_bfloat16>(int B, int C, int T_, float dc, bool check, bool timeit, bool sc) {
  using H = __nv_bfloat16;
  all_cfgs<H, Cfg<H, 4, 256, 2, 3>, Cfg<H, 4, 256, 4, 2>, Cfg<H, 4, 256, 8, 2>,
           Cfg<H, 8, 256, 2, 3>, Cfg<H, 8, 256, 4, 2>, Cfg<H, 8, 256, 8, 2>,
           Cfg<H, 8, 256, 16, 1>, Cfg<H, 8, 512, 8, 1>, Cfg<H, 16, 256, 8, 2>,
           Cfg<H, 16, 256, 16, 1>, Cfg<H, 32, 256, 16, 1>>(B, C, T_, dc, check, timeit, sc);
}

int main(int argc, char** argv) {
  const bool checks_only = argc > 1 && std::string(argv[1]) == "--checks";
  {
    const size_t n = 1ull << 30;
    void *a, *b;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&b, n));
    CK(cudaMemset(a, 1, n));
    const float us = time_loop(20, 1, 0, [&](int) {
      CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0));
    });
    g_copy_gbps = 2.0 * n / (us * 1e3);
    std::printf("copy bandwidth (1 GiB memcpy): %.0f GB/s\n", g_copy_gbps);
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  // Correctness first: odd sizes (scalar path, partial tiles, C not a
  // multiple of the rows), a DC offset, the streaming state.
  shape<float>(3, 100, 1001, 0.f, true, false, true);
  shape<__nv_bfloat16>(3, 100, 1001, 0.f, true, false, true);
  shape<float>(2, 128, 6400, 1000.f, true, false, false);
  shape<float>(80, 64, 301, 0.f, true, false, false);
  shape<float>(16, 512, 4000, 0.f, true, false, true);
  shape<__nv_bfloat16>(2, 128, 64000, 0.f, true, false, true);
  if (checks_only) return 0;
  // Timing.
  const int shapes[3][3] = {{16, 512, 4000}, {4, 256, 16000}, {2, 128, 64000}};
  for (auto& sh : shapes) shape<float>(sh[0], sh[1], sh[2], 0.f, false, true);
  for (auto& sh : shapes) shape<__nv_bfloat16>(sh[0], sh[1], sh[2], 0.f, false, true);
  shape<float>(80, 64, 301, 0.f, false, true);
  return 0;
}
