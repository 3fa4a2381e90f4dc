// The float64 cLN forward reference of the C++ checks (DESIGN.md section 2, the Chan
// combine per frame): used by the CPU emulator's self-test (emu_selftest.cpp) and by the
// standalone GPU prototype bench/lookback/proto.cu.  Host-only, standard C++.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

struct ClnRef {
  std::vector<double> y, mean, rstd, m2_last;
};
inline ClnRef cln_fwd_ref(const std::vector<double>& x, const std::vector<double>* g,
                          const std::vector<double>* be, int B, int C, int L, double eps,
                          const std::vector<long long>* cnt0, const std::vector<double>* m0,
                          const std::vector<double>* M0) {
  ClnRef r;
  r.y.resize(x.size());
  r.mean.resize(static_cast<size_t>(B) * L);
  r.rstd.resize(r.mean.size());
  r.m2_last.resize(B);
  for (int b = 0; b < B; ++b) {
    double n = cnt0 ? static_cast<double>((*cnt0)[b]) : 0, m = m0 && n > 0 ? (*m0)[b] : 0;
    double M = M0 && n > 0 ? (*M0)[b] : 0;
    for (int t = 0; t < L; ++t) {
      double s = 0;
      for (int c = 0; c < C; ++c) s += x[(static_cast<size_t>(b) * C + c) * L + t];
      const double fm = s / C;
      double fM = 0;
      for (int c = 0; c < C; ++c) {
        const double d = x[(static_cast<size_t>(b) * C + c) * L + t] - fm;
        fM += d * d;
      }
      const double nn = n + C, d = fm - m;
      m = m + d * C / nn;
      M = M + fM + d * d * n * C / nn;
      n = nn;
      const double rs = 1.0 / std::sqrt(M / n + eps);
      r.mean[static_cast<size_t>(b) * L + t] = m;
      r.rstd[static_cast<size_t>(b) * L + t] = rs;
      for (int c = 0; c < C; ++c) {
        const size_t i = (static_cast<size_t>(b) * C + c) * L + t;
        r.y[i] = (x[i] - m) * rs * (g ? (*g)[c] : 1.0) + (be ? (*be)[c] : 0.0);
      }
    }
    r.m2_last[b] = M;
  }
  return r;
}
