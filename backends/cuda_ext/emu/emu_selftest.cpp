// Runs the cuda_ext launchers and kernels on the CPU emulator (cuda_emu.h)
// and compares them with a float64 reference written here from DESIGN.md.
// Built and run by tests/test_cuda_ext_build.py (about 15 s); prints one
// line per case and "N passed, N failed".
//
// The CUDA runtime calls the launchers make are emulated below: memory is
// host memory, memsets are memset, and the device has 40 SMs with 2 blocks
// each (80 persistent RMSNorm backward blocks at most: most shapes here
// loop over several row groups per block).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "launch_util.h"  // colsum, blocks_per_sm (tested directly)
#include "launchers.h"
#include "cln_ref.h"  // cln_fwd_ref

// ---- the CUDA runtime, emulated ---------------------------------------------
extern "C" {
cudaError_t cudaGetLastError() { return cudaSuccess; }
const char* cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
const char* cudaGetErrorString(cudaError_t) { return "emulated error"; }
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t) {
  std::memset(p, v, n);
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) {
  *v = 40;
  return cudaSuccess;
}
// Counted, so that test_blocks_per_sm can see what normk::blocks_per_sm
// asks of the runtime.
int g_occupancy_queries = 0;
int g_last_smem_optin = 0;
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void*, int, size_t) {
  ++g_occupancy_queries;
  *n = 2;
  return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int v) {
  g_last_smem_optin = v;
  return cudaSuccess;
}
}

namespace {

using normk::DType;

// ---- element types on the host ------------------------------------------------
size_t elem_size(DType t) { return t == DType::kF64 ? 8 : (t == DType::kF32 ? 4 : 2); }
bool is_acc64(DType t) { return t == DType::kF64; }
DType acc_of(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// A typed host buffer; values pass through double.
struct Buf {
  DType t;
  std::vector<unsigned char> bytes;
  Buf(DType t_, size_t n, double fill = std::nan("")) : t(t_), bytes(n * elem_size(t_) + 16) {
    for (size_t i = 0; i < n; ++i) set(i, fill);
  }
  size_t size() const { return (bytes.size() - 16) / elem_size(t); }
  void poison() {
    for (size_t i = 0; i < size(); ++i) set(i, std::nan(""));
  }
  void* ptr() { return bytes.data(); }
  double get(size_t i) const {
    const unsigned char* p = bytes.data() + i * elem_size(t);
    switch (t) {
      case DType::kF32: { float v; std::memcpy(&v, p, 4); return v; }
      case DType::kF64: { double v; std::memcpy(&v, p, 8); return v; }
      case DType::kF16: { __half v; std::memcpy(&v, p, 2); return __half2float(v); }
      case DType::kBF16: { __nv_bfloat16 v; std::memcpy(&v, p, 2); return __bfloat162float(v); }
    }
    return 0;
  }
  void set(size_t i, double x) {
    unsigned char* p = bytes.data() + i * elem_size(t);
    switch (t) {
      case DType::kF32: { const float v = static_cast<float>(x); std::memcpy(p, &v, 4); break; }
      case DType::kF64: std::memcpy(p, &x, 8); break;
      case DType::kF16: { const __half v = __float2half_rn(static_cast<float>(x)); std::memcpy(p, &v, 2); break; }
      case DType::kBF16: { const __nv_bfloat16 v = __float2bfloat16_rn(static_cast<float>(x)); std::memcpy(p, &v, 2); break; }
    }
  }
  std::vector<double> values() const {
    std::vector<double> v(size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = get(i);
    return v;
  }
};

// ||out - ref|| / max(||ref||, scale): `scale` is the norm of the terms a result is a sum or
// a difference of, where those can cancel (RMSNorm's dx = r * (g - xhat * mean(g * xhat)) is
// tiny at N = 1, though r * g is not; dw over a few rows): the error is judged against the size
// of what was computed (tests/harness.py does the same).
double rel(const Buf& out, const std::vector<double>& ref, size_t off = 0, double scale = 0) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double o = out.get(off + i);
    if (!std::isfinite(o)) return INFINITY;
    num += (o - ref[i]) * (o - ref[i]);
    den += ref[i] * ref[i];
  }
  den = std::max(std::sqrt(den), scale);
  return den > 0 ? std::sqrt(num) / den : std::sqrt(num);
}

double tol_of(DType t) {
  switch (t) {
    case DType::kF32: return 1e-5;
    case DType::kF16: return 2e-3;
    case DType::kBF16: return 2e-2;
    case DType::kF64: return 1e-12;
  }
  return 0;
}
const char* name_of(DType t) { return normk::dtype_name(t); }

int g_pass = 0, g_fail = 0;
void report(const std::string& what, const std::vector<std::pair<const char*, double>>& errs,
            double tol) {
  bool bad = false;
  std::string cols;
  for (const auto& [k, v] : errs) {
    bad |= !(v <= tol);
    char b[64];
    std::snprintf(b, sizeof b, "  %s=%.2e", k, v);
    cols += b;
  }
  (bad ? g_fail : g_pass)++;
  std::printf("%s %-60s%s  (tol %.0e)\n", bad ? "FAIL" : "ok  ", what.c_str(), cols.c_str(), tol);
  std::fflush(stdout);
}

std::mt19937_64 rng(1234);
double randn() { return std::normal_distribution<double>(0.0, 1.0)(rng); }

// ---- float64 references (DESIGN.md; the forward's is cln_ref.h) ---------------
struct ClnBwdRef {
  std::vector<double> dx, dgamma, dbeta;
  // rel's scales: the norms of the terms (r * g, dy * xhat, dy) the results are made of.
  double dx_scale = 0, dgamma_scale = 0, dbeta_scale = 0;
};
ClnBwdRef cln_bwd_ref(const std::vector<double>& dy, const std::vector<double>& x,
                      const std::vector<double>* g, const std::vector<double>& mean,
                      const std::vector<double>& rstd, const std::vector<long long>* cnt, int B,
                      int C, int L) {
  ClnBwdRef r;
  r.dx.resize(x.size());
  r.dgamma.assign(C, 0);
  r.dbeta.assign(C, 0);
  for (int b = 0; b < B; ++b) {
    std::vector<double> a(L), bb(L);
    for (int t = 0; t < L; ++t) {
      const double mu = mean[static_cast<size_t>(b) * L + t], rs = rstd[static_cast<size_t>(b) * L + t];
      const double n = (cnt ? (*cnt)[b] : 0) + static_cast<double>(C) * (t + 1);
      double G1 = 0, G2 = 0;
      for (int c = 0; c < C; ++c) {
        const size_t i = (static_cast<size_t>(b) * C + c) * L + t;
        const double gg = dy[i] * (g ? (*g)[c] : 1.0), xh = (x[i] - mu) * rs;
        G1 += gg;
        G2 += gg * xh;
        r.dgamma[c] += dy[i] * xh;
        r.dbeta[c] += dy[i];
        r.dx_scale += rs * gg * rs * gg;
        r.dgamma_scale += dy[i] * xh * dy[i] * xh;
        r.dbeta_scale += dy[i] * dy[i];
      }
      a[t] = rs * G1 / n;
      bb[t] = rs * rs * G2 / n;
    }
    // dx[c, tau] = r g - sum_{t >= tau} a_t - sum_{t >= tau} b_t (x - mu_t)
    double Sa = 0, Sb = 0, Sbm = 0;
    for (int t = L - 1; t >= 0; --t) {
      Sa += a[t];
      Sb += bb[t];
      Sbm += bb[t] * mean[static_cast<size_t>(b) * L + t];
      const double rs = rstd[static_cast<size_t>(b) * L + t];
      for (int c = 0; c < C; ++c) {
        const size_t i = (static_cast<size_t>(b) * C + c) * L + t;
        r.dx[i] = rs * dy[i] * (g ? (*g)[c] : 1.0) - Sa - (x[i] * Sb - Sbm);
      }
    }
  }
  r.dx_scale = std::sqrt(r.dx_scale);
  r.dgamma_scale = std::sqrt(r.dgamma_scale);
  r.dbeta_scale = std::sqrt(r.dbeta_scale);
  return r;
}

std::vector<double> rand_vec(size_t n, double scale, double offset) {
  std::vector<double> v(n);
  for (auto& e : v) e = offset + scale * randn();
  return v;
}

// Round a vector through dtype t (the kernel sees the rounded values).
Buf to_buf(const std::vector<double>& v, DType t) {
  Buf b(t, v.size());
  for (size_t i = 0; i < v.size(); ++i) b.set(i, v[i]);
  return b;
}

// The cross-tile knob of a cLN call (launchers.h): G, tiles per prefix
// group (0: the default, 256).
// stream_ppr / stream_stages pick the kernel family (launchers.h): 0 / 0 the
// launcher's choice (the streaming kernels wherever their ring fits), -1 the
// register-tile kernels, else a forced streaming tile shape.  resident: the
// forward's resident kernel, 0 where the sequence fits (every short shape
// here), 1 forced, -1 never (the cross-tile kernels).
struct Knobs {
  const char* name;
  int64_t group;
  int64_t stream_ppr = 0;
  int64_t stream_stages = 0;
  int64_t stream_lead = 0;
  int64_t resident = 0;
  int64_t stream_tma = 0;  // the streaming kernels' copies: 0 TMA where it applies, -1 cp.async
  int64_t pdl = 1;  // the workspace zeroed by the zero kernel (1) or a memset (0)
  int64_t prefix_spin = 1;  // the prefix waits' polls: 1 per lane, 0 per word (launchers.h)
  int64_t frame_shift = 1;  // the float32 frame sums' shift (launchers.h): 1 on, 0 off
};
// The default: one group for every shape here (at most 141 tiles).
const Knobs kDefault{"default", 0};
// Small G: several group links, group starts and in-group tiles (G = 1:
// every tile a group start); the register-tile kernels; forced streaming
// shapes (PPR 4 / 8 / 16; 2- to 4-deep rings refilled by the output warps or
// with producer leads 1 to 3) where the shape fits them.
const Knobs kSmallG[] = {{"G=3", 3, 0, 0, 0, -1},
                         {"G=3 word spin", 3, 0, 0, 0, -1, 0, 1, 0},
                         {"G=1", 1, 0, 0, 0, -1},
                         {"resident", 0, 0, 0, 0, 1},
                         {"regs", 0, -1},
                         {"regs G=3", 3, -1},
                         {"ppr=8 S=2 G=2", 2, 8, 2},
                         {"ppr=16 S=4 D=2", 0, 16, 4, 2},
                         {"ppr=8 S=4 refill G=2", 2, 8, 4},
                         {"ppr=8 S=3 D=1", 0, 8, 3, 1},
                         {"ppr=4 S=4 D=3 G=3", 3, 4, 4, 3},
                         {"cp.async G=2", 2, 0, 0, 0, -1, -1},
                         {"ppr=8 S=2 cp.async", 0, 8, 2, 0, 0, -1}};
// Streaming with state and G = 2.
const Knobs kStream{"G=2", 2, 0, 0, 0, -1};
// The long sequences (L >= 1000; slow on the emulator: one fiber per CUDA
// thread) run the default (for the 141 fp32 tiles of L = 4500, one group:
// the last tile reduces 140 words, more than the kPrefixU rounds of 32 in
// flight, so the prefix loop iterates) and G = 33 (several group links;
// a group start reduces 33 words: a full round and a one-word round).
const Knobs kLongG{"G=33", 33, 0, 0, 0, -1, 0, 0};  // with the memset

// A forced streaming shape that needs more shared memory than a block has
// throws (launchers.h); such a variant is skipped for that shape.
bool too_big(const std::runtime_error& e, const Knobs& k) {
  return (k.stream_ppr > 0 || k.stream_stages > 0 || k.resident > 0) &&
         std::strstr(e.what(), "needs more shared memory") != nullptr;
}

// Run a launcher with a 256-byte aligned host workspace of the size it asks
// for, poisoned (0xA5 bytes) as a reused torch.empty workspace may be: a
// ticket counter or a partial the launcher forgot to zero shows.  (A ready
// flag it forgot cannot show here: blocks run in ticket order, so every word
// is written before it is read; tests/test_cuda_ext_paths.py,
// test_workspace_reuse, covers that on the GPU.)
template <typename Call>
void run_with_workspace(const Call& c, size_t (*bytes)(const Call&),
                        void (*run)(const Call&, void*, size_t, cudaStream_t)) {
  std::vector<unsigned char> ws(bytes(c) + 256, 0xA5);
  void* w = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 255) & ~uintptr_t(255));
  run(c, w, ws.size() - 256, nullptr);
}

template <typename Call>
void set_knobs(Call& c, const Knobs& k) {
  c.group_tiles = k.group;
  c.stream_ppr = k.stream_ppr;
  c.stream_stages = k.stream_stages;
  c.stream_lead = k.stream_lead;
  c.stream_tma = k.stream_tma;
  c.pdl = k.pdl;
  c.prefix_spin = k.prefix_spin;
  if constexpr (std::is_same_v<Call, normk::ClnFwdCall>) {
    c.resident = k.resident;
    c.frame_shift = k.frame_shift;
  }
}

// full: every knob variant; else the default and kLongG only.
void test_cln(DType dt, DType pt, bool params, int B, int C, int L, double dc, bool full) {
  std::vector<Knobs> variants(std::begin(kSmallG), std::end(kSmallG));
  if (!full) variants = {kLongG};
  std::vector<const Knobs*> streams = {&kDefault, &kStream};
  if (!full) streams.pop_back();
  const DType acc = acc_of(dt);
  Buf xb = to_buf(rand_vec(static_cast<size_t>(B) * C * L, 1.0, dc), dt);
  const auto x = xb.values();
  Buf gb = to_buf(rand_vec(C, 0.5, 1.0), pt), bb = to_buf(rand_vec(C, 0.5, 0.0), pt);
  const auto gv = gb.values(), bv = bb.values();
  const ClnRef ref = cln_fwd_ref(x, params ? &gv : nullptr, params ? &bv : nullptr, B, C, L, 1e-8,
                                 nullptr, nullptr, nullptr);
  char tag[160];
  std::snprintf(tag, sizeof tag, "%s/%s (%d,%d,%d) params=%d dc=%g", name_of(dt), name_of(pt),
                B, C, L, params, dc);
  const double tol = tol_of(dt) * (dc != 0 ? 20 : 1);
  // A mean is judged against the frames' spread (the norm of 1 / rstd_t): y and dx use x - mu_t,
  // so an error of a few ulps of sigma is what counts, however close to 0 mu_t is (zero-mean
  // data; the float32 sums about the tile's first value, kStatShift, sit there).
  double sd2 = 0, sd2_last = 0;
  for (size_t i = 0; i < ref.rstd.size(); ++i) {
    sd2 += 1.0 / (ref.rstd[i] * ref.rstd[i]);
    if (i % L == static_cast<size_t>(L - 1)) sd2_last += 1.0 / (ref.rstd[i] * ref.rstd[i]);
  }
  const double sd = std::sqrt(sd2), sd_last = std::sqrt(sd2_last);

  auto run_fwd = [&](const Knobs& k, Buf& xin, int Lc, const long long* cnt, Buf* m0, Buf* M0,
                     Buf& y, Buf& mean, Buf& rstd, Buf& m2, Buf* mlast = nullptr,
                     bool stats = true) {
    normk::ClnFwdCall c{};
    c.dtype = dt;
    c.param_dtype = pt;
    c.x = xin.ptr();
    c.gamma = params ? gb.ptr() : nullptr;
    c.beta = params ? bb.ptr() : nullptr;
    c.eps = 1e-8;
    c.count0 = reinterpret_cast<const int64_t*>(cnt);
    c.mean0 = m0 ? m0->ptr() : nullptr;
    c.m20 = M0 ? M0->ptr() : nullptr;
    c.y = y.ptr();
    c.mean = stats ? mean.ptr() : nullptr;
    c.rstd = stats ? rstd.ptr() : nullptr;
    c.m2_last = m2.ptr();
    c.mean_last = mlast ? mlast->ptr() : nullptr;
    c.B = B;
    c.C = C;
    c.L = Lc;
    set_knobs(c, k);
    run_with_workspace(c, normk::cln_fwd_workspace_bytes, normk::cln_fwd);
  };

  Buf y(dt, x.size()), mean(acc, static_cast<size_t>(B) * L), rstd(acc, mean.size()), m2(acc, B);
  run_fwd(kDefault, xb, L, nullptr, nullptr, nullptr, y, mean, rstd, m2);
  report(std::string("cln fwd ") + tag,
         {{"y", rel(y, ref.y)}, {"mean", rel(mean, ref.mean, 0, sd)}, {"rstd", rel(rstd, ref.rstd)},
          {"m2", rel(m2, ref.m2_last)}},
         tol);

  // No backward follows: no per-frame statistics (their buffers must stay as
  // poisoned), the last frame's mean instead; y and m2 bitwise the same.
  {
    const double poison = 12345.0;
    Buf yn(dt, x.size()), mn(acc, mean.size(), poison), rn(acc, mean.size(), poison);
    Buf Mn(acc, B), ml(acc, B);
    std::vector<double> ref_ml(B);
    run_fwd(kDefault, xb, L, nullptr, nullptr, nullptr, yn, mn, rn, Mn, &ml, false);
    double diff = 0, touched = 0;
    for (size_t i = 0; i < y.size(); ++i) diff = std::max(diff, std::fabs(yn.get(i) - y.get(i)));
    for (int b = 0; b < B; ++b) {
      diff = std::max(diff, std::fabs(Mn.get(b) - m2.get(b)));
      ref_ml[b] = ref.mean[static_cast<size_t>(b) * L + L - 1];
    }
    for (size_t i = 0; i < mn.size(); ++i)
      touched += (mn.get(i) != poison) + (rn.get(i) != poison);
    report(std::string("cln fwd no stats ") + tag,
           {{"y, m2 not bitwise", diff > 0 ? 1.0 + diff : 0.0}, {"stats written", touched},
            {"mean_last", rel(ml, ref_ml, 0, sd_last)}},
           tol);
  }

  // The knob variants, each against the reference.  (Different G group the
  // sums differently, so the last bits may differ: no bitwise comparison.)
  for (const Knobs& k : variants) {
    Buf yk(dt, x.size()), mk(acc, mean.size()), rk(acc, mean.size()), Mk(acc, B);
    try {
      run_fwd(k, xb, L, nullptr, nullptr, nullptr, yk, mk, rk, Mk);
    } catch (const std::runtime_error& e) {
      if (!too_big(e, k)) throw;
      std::printf("skip cln fwd %s %s: %s\n", tag, k.name, e.what());
      continue;
    }
    report(std::string("cln fwd ") + tag + " " + k.name,
           {{"y", rel(yk, ref.y)}, {"mean", rel(mk, ref.mean, 0, sd)}, {"rstd", rel(rk, ref.rstd)},
            {"m2", rel(Mk, ref.m2_last)}},
           tol);
  }

  // Streamed in chunks of 1, 5, 40, ... frames with the state carried.
  for (const Knobs* k : streams) {
    std::vector<long long> cnt(B, 0);
    Buf m0(acc, B, 0.0), M0(acc, B, 0.0);
    std::vector<double> ys(x.size()), ms(mean.size()), rs(mean.size());
    int t0 = 0;
    const int steps[] = {1, 5, 40, 1, 100000};
    for (int s = 0; t0 < L; ++s) {
      const int Lc = std::min(steps[s % 5], L - t0);
      Buf xc(dt, static_cast<size_t>(B) * C * Lc);
      for (int b = 0; b < B; ++b)
        for (int c = 0; c < C; ++c)
          for (int t = 0; t < Lc; ++t)
            xc.set((static_cast<size_t>(b) * C + c) * Lc + t, x[(static_cast<size_t>(b) * C + c) * L + t0 + t]);
      Buf yc(dt, xc.size()), mc(acc, static_cast<size_t>(B) * Lc), rc(acc, mc.size()), M1(acc, B);
      run_fwd(*k, xc, Lc, t0 > 0 ? cnt.data() : nullptr, t0 > 0 ? &m0 : nullptr,
              t0 > 0 ? &M0 : nullptr, yc, mc, rc, M1);
      for (int b = 0; b < B; ++b) {
        for (int c = 0; c < C; ++c)
          for (int t = 0; t < Lc; ++t)
            ys[(static_cast<size_t>(b) * C + c) * L + t0 + t] = yc.get((static_cast<size_t>(b) * C + c) * Lc + t);
        for (int t = 0; t < Lc; ++t) {
          ms[static_cast<size_t>(b) * L + t0 + t] = mc.get(static_cast<size_t>(b) * Lc + t);
          rs[static_cast<size_t>(b) * L + t0 + t] = rc.get(static_cast<size_t>(b) * Lc + t);
        }
        cnt[b] += static_cast<long long>(C) * Lc;
        m0.set(b, mc.get(static_cast<size_t>(b) * Lc + Lc - 1));
        M0.set(b, M1.get(b));
      }
      t0 += Lc;
    }
    Buf ysb(DType::kF64, ys.size()), msb(DType::kF64, ms.size()), rsb(DType::kF64, rs.size());
    for (size_t i = 0; i < ys.size(); ++i) ysb.set(i, ys[i]);
    for (size_t i = 0; i < ms.size(); ++i) {
      msb.set(i, ms[i]);
      rsb.set(i, rs[i]);
    }
    report(std::string("cln stream ") + tag + " " + k->name,
           {{"y", rel(ysb, ref.y)}, {"mean", rel(msb, ref.mean, 0, sd)}, {"rstd", rel(rsb, ref.rstd)},
            {"m2", rel(M0, ref.m2_last)}},
           tol);
  }

  // Backward, with and without a history count: the default knobs, then the
  // variants.
  for (int with_count = 0; with_count < 2; ++with_count) {
    Buf dyb = to_buf(rand_vec(x.size(), 1.0, 0.0), dt);
    const auto dy = dyb.values();
    std::vector<long long> cnt(B, 3LL * C);
    const auto mv = mean.values(), rv = rstd.values();
    const ClnBwdRef r = cln_bwd_ref(dy, x, params ? &gv : nullptr, mv, rv,
                                    with_count ? &cnt : nullptr, B, C, L);
    for (int v = -1; v < static_cast<int>(variants.size()); ++v) {
      const Knobs& k = v < 0 ? kDefault : variants[v];
      normk::ClnBwdCall c{};
      Buf dx(dt, x.size()), dg(acc, C), dbt(acc, C);
      c.dtype = dt;
      c.param_dtype = pt;
      c.dy = dyb.ptr();
      c.x = xb.ptr();
      c.gamma = params ? gb.ptr() : nullptr;
      c.mean = mean.ptr();
      c.rstd = rstd.ptr();
      c.count = with_count ? reinterpret_cast<const int64_t*>(cnt.data()) : nullptr;
      c.dx = dx.ptr();
      c.dgamma = dg.ptr();
      c.dbeta = dbt.ptr();
      c.B = B;
      c.C = C;
      c.L = L;
      set_knobs(c, k);
      try {
        run_with_workspace(c, normk::cln_bwd_workspace_bytes, normk::cln_bwd);
      } catch (const std::runtime_error& e) {
        if (!too_big(e, k)) throw;
        std::printf("skip cln bwd %s %s: %s\n", tag, k.name, e.what());
        continue;
      }
      report(std::string("cln bwd ") + tag + (with_count ? " count " : " ") + k.name,
             {{"dx", rel(dx, r.dx, 0, r.dx_scale)},
              {"dgamma", rel(dg, r.dgamma, 0, r.dgamma_scale)},
              {"dbeta", rel(dbt, r.dbeta, 0, r.dbeta_scale)}},
             tol * 10);
    }
  }
}

void test_rms(DType dt, DType pt, bool has_w, int M, int N, int pad, int off) {
  const DType acc = acc_of(dt);
  const int ld = N + pad + off;
  Buf base = to_buf(rand_vec(static_cast<size_t>(M) * ld, 1.0, 0.0), dt);
  Buf wb = to_buf(rand_vec(N, 0.5, 1.0), pt);
  std::vector<double> x(static_cast<size_t>(M) * N), ry(x.size()), rr(M), w = wb.values();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) x[static_cast<size_t>(i) * N + j] = base.get(static_cast<size_t>(i) * ld + off + j);
  for (int i = 0; i < M; ++i) {
    double s = 0;
    for (int j = 0; j < N; ++j) s += x[static_cast<size_t>(i) * N + j] * x[static_cast<size_t>(i) * N + j];
    rr[i] = 1.0 / std::sqrt(s / N + 1e-6);
    for (int j = 0; j < N; ++j)
      ry[static_cast<size_t>(i) * N + j] = x[static_cast<size_t>(i) * N + j] * rr[i] * (has_w ? w[j] : 1.0);
  }
  const void* xp = static_cast<unsigned char*>(base.ptr()) + off * elem_size(dt);
  Buf y(dt, x.size()), r(acc, M);
  normk::RmsFwdCall f{};
  f.dtype = dt;
  f.param_dtype = pt;
  f.x = xp;
  f.ldx = ld;
  f.w = has_w ? wb.ptr() : nullptr;
  f.eps = 1e-6;
  f.y = y.ptr();
  f.rstd = r.ptr();
  f.M = M;
  f.N = N;
  normk::rms_fwd(f, nullptr);
  char tag[160];
  std::snprintf(tag, sizeof tag, "%s/%s (%d,%d) ld=%d off=%d w=%d", name_of(dt), name_of(pt), M, N,
                ld, off, has_w);
  report(std::string("rms fwd ") + tag, {{"y", rel(y, ry)}, {"rstd", rel(r, rr)}}, tol_of(dt));

  Buf dyb = to_buf(rand_vec(x.size(), 1.0, 0.0), dt);
  const auto dy = dyb.values();
  const auto rv = r.values();
  std::vector<double> rdx(x.size()), rdw(N, 0.0);
  double dx_scale = 0, dw_scale = 0;  // the norms of r * g and of dy * xhat (rel's scale)
  for (int i = 0; i < M; ++i) {
    double s = 0;
    for (int j = 0; j < N; ++j) {
      const size_t k = static_cast<size_t>(i) * N + j;
      const double xh = x[k] * rv[i];
      const double g = dy[k] * (has_w ? w[j] : 1.0);
      s += g * xh;
      rdw[j] += dy[k] * xh;
      dx_scale += rv[i] * g * rv[i] * g;
      dw_scale += dy[k] * xh * dy[k] * xh;
    }
    for (int j = 0; j < N; ++j) {
      const size_t k = static_cast<size_t>(i) * N + j;
      rdx[k] = rv[i] * (dy[k] * (has_w ? w[j] : 1.0) - x[k] * rv[i] * s / N);
    }
  }
  Buf dx(dt, x.size()), dw(acc, N);
  normk::RmsBwdCall bc{};
  bc.dtype = dt;
  bc.param_dtype = pt;
  bc.dy = dyb.ptr();
  bc.x = xp;
  bc.ldx = ld;
  bc.w = has_w ? wb.ptr() : nullptr;
  bc.rstd = r.ptr();
  bc.dx = dx.ptr();
  bc.dw = dw.ptr();
  bc.M = M;
  bc.N = N;
  // The backward kernels: the default (the row kernel where it applies),
  // the general kernel, and the row kernel with each ring depth (skipped
  // where it does not apply).
  const int stages[] = {0, -1, 1, 2, 3};
  for (int st : stages) {
    bc.row_stages = st;
    dx.poison();
    dw.poison();
    try {
      run_with_workspace(bc, normk::rms_bwd_workspace_bytes, normk::rms_bwd);
    } catch (const std::runtime_error& e) {
      if (st <= 0 || std::strstr(e.what(), "row_stages") == nullptr) throw;
      continue;
    }
    const std::string name = st == 0 ? "" : st < 0 ? "[general] " : "[S" + std::to_string(st) + "] ";
    report("rms bwd " + name + tag,
           {{"dx", rel(dx, rdx, 0, std::sqrt(dx_scale))}, {"dw", rel(dw, rdw, 0, std::sqrt(dw_scale))}},
           tol_of(dt) * 10);
  }
}

}  // namespace

// The deterministic column sum on its own: the one-launch path (K <= 1024
// rows), the two-stage path past it, both sides of the boundary, and the
// split into two outputs that cLN's dgamma / dbeta use.
void test_colsum(long long K, int W, int split) {
  std::vector<float> in(static_cast<size_t>(K) * W);
  for (float& v : in) v = static_cast<float>(randn());
  std::vector<float> out(W + 1, std::nanf("")), mid(normk::colsum_scratch_elems(K, W) + 1);
  // out1 is out + split + 1: one poisoned word between the halves must stay NaN.
  normk::colsum<float>(in.data(), K, W, out.data(), out.data() + split + 1, split, mid.data(),
                       nullptr);
  double num = 0, den = 0;
  for (int c = 0; c < W; ++c) {
    double ref = 0;
    for (long long r = 0; r < K; ++r) ref += in[static_cast<size_t>(r) * W + c];
    const float got = out[c < split ? c : c + 1];
    num += (got - ref) * (got - ref);
    den += ref * ref;
  }
  const double err = std::isnan(out[split]) ? std::sqrt(num / den) : 1.0;
  // float sums of K terms: the bound grows with sqrt(K) (DESIGN.md).
  report("colsum K=" + std::to_string(K) + " W=" + std::to_string(W) + " split=" +
             std::to_string(split),
         {{"out", err}}, 1e-6 * std::sqrt(static_cast<double>(K)));
}

// blocks_per_sm queries the runtime once per (kernel, threads, smem) and
// only ever raises a kernel's shared-memory opt-in.
void test_blocks_per_sm() {
  static const int kernel_a = 0, kernel_b = 0;  // stand-ins: only their addresses are keys
  const void* a = &kernel_a;
  const void* b = &kernel_b;
  const int q0 = g_occupancy_queries;
  bool ok = normk::blocks_per_sm(a, 256, 100 * 1024) == 2 && g_last_smem_optin == 100 * 1024;
  g_last_smem_optin = -1;
  ok &= normk::blocks_per_sm(a, 256, 60 * 1024) == 2 && g_last_smem_optin == -1;  // no lowering
  ok &= normk::blocks_per_sm(a, 256, 120 * 1024) == 2 && g_last_smem_optin == 120 * 1024;
  ok &= g_occupancy_queries == q0 + 3;
  g_last_smem_optin = -1;
  ok &= normk::blocks_per_sm(a, 256, 100 * 1024) == 2;
  ok &= normk::blocks_per_sm(a, 256, 60 * 1024) == 2;
  ok &= g_occupancy_queries == q0 + 3 && g_last_smem_optin == -1;  // cached, nothing re-set
  ok &= normk::blocks_per_sm(b, 256, 16 * 1024) == 2 && g_last_smem_optin == -1;  // <= 48 KB
  ok &= normk::blocks_per_sm(a, 512, 100 * 1024) == 2 && g_occupancy_queries == q0 + 5;
  report("blocks_per_sm cache and opt-in", {{"mismatch", ok ? 0.0 : 1.0}}, 0.0);
}

// The float32 forward's frame sums under a DC offset (kShiftFrameSums, launchers.h's
// frame_shift): every forward kernel family within the harness's tolerance (common/testing.py:
// 1e-6 + 4 u sqrt(C L) + 2 D u) with the shift, and, as its negative control, the resident
// kernel over it without (8.6e-4 against 1.35e-4 at (4, 4096, 1)): a float32 sum of C values
// at an offset of D standard deviations loses up to D u C in one thread's running sum, which
// the first frames carry.  The tile kernels' sums (a few rows per thread, then a tree) lose
// less, 4.6e-5 there without the shift and 2.4e-5 with it: no control for them.
void test_frame_shift() {
  struct S {
    int B, C, L;
  };
  const double u = std::ldexp(1.0, -24), dc = 1000.0;
  const Knobs resident{"resident", 0, 0, 0, 0, 1};
  const Knobs regs{"regs", 0, -1, 0, 0, -1};
  const Knobs stream{"stream cp.async", 0, 0, 0, 0, -1, -1};
  for (const S& s : {S{4, 4096, 1}, S{2, 512, 40}}) {
    const size_t n = static_cast<size_t>(s.B) * s.C * s.L;
    Buf xb = to_buf(rand_vec(n, 1.0, dc), DType::kF32);
    const ClnRef ref = cln_fwd_ref(xb.values(), nullptr, nullptr, s.B, s.C, s.L, 1e-8, nullptr,
                                   nullptr, nullptr);
    const double tol = 1e-6 + 4 * u * std::sqrt(static_cast<double>(s.C) * s.L) + 2 * dc * u;
    for (const Knobs* k : {&resident, &regs, &stream}) {
      for (int shift : {1, 0}) {
        const bool control = k == &resident && s.C == 4096;  // the others: tree sums, within
        if (shift == 0 && !control) continue;
        Knobs kk = *k;
        kk.frame_shift = shift;
        normk::ClnFwdCall c{};
        c.dtype = c.param_dtype = DType::kF32;
        c.x = xb.ptr();
        c.eps = 1e-8;
        Buf y(DType::kF32, n), mean(DType::kF32, static_cast<size_t>(s.B) * s.L);
        Buf rstd(DType::kF32, mean.size()), m2(DType::kF32, s.B);
        c.y = y.ptr();
        c.mean = mean.ptr();
        c.rstd = rstd.ptr();
        c.m2_last = m2.ptr();
        c.B = s.B;
        c.C = s.C;
        c.L = s.L;
        set_knobs(c, kk);
        run_with_workspace(c, normk::cln_fwd_workspace_bytes, normk::cln_fwd);
        const double e = rel(y, ref.y);
        char tag[160];
        std::snprintf(tag, sizeof tag, "cln fwd frame shift=%d float32 (%d,%d,%d) dc=1000 %s",
                      shift, s.B, s.C, s.L, k->name);
        if (shift)
          report(tag, {{"y", e}}, tol);
        else  // the negative control: over the tolerance without the shift
          report(std::string(tag) + " (must miss its tolerance)",
                 {{"tolerance / y", e > tol ? tol / e : 1.0 + tol / e}}, 1.0);
      }
    }
  }
}

namespace {
struct P {
  DType dt, pt;
};
const P kTypes[] = {{DType::kF32, DType::kF32},
                    {DType::kBF16, DType::kF32},
                    {DType::kF16, DType::kF16},
                    {DType::kF64, DType::kF64}};

// `emu_selftest --random N [SEED]`: N random cLN / RMSNorm cases instead of the fixed list
// (a maintainer's fuzz run; CI runs the fixed list).  Sizes stay small enough for the
// emulator's one fiber per CUDA thread: at most 40,000 cLN values, 200,000 RMSNorm values.
int run_random(int n, unsigned long long seed) {
  std::mt19937_64 pick(seed);
  rng.seed(seed ^ 0x9E3779B97F4A7C15ULL);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(pick); };
  // Log-uniform in [1, hi]: small sizes as often as large ones.
  auto logu = [&](int hi) {
    const double e = std::uniform_real_distribution<double>(0.0, std::log(hi + 1.0))(pick);
    return std::max(1, std::min(hi, static_cast<int>(std::exp(e))));
  };
  std::printf("random cases: %d, seed %llu\n", n, seed);
  for (int i = 0; i < n; ++i) {
    const P& p = kTypes[uni(0, 3)];
    if (uni(0, 2) > 0) {
      const int B = uni(1, 3), C = logu(700);
      int L = logu(2000);
      while (static_cast<long long>(B) * C * L > 40000 && L > 1) L = std::max(1, L / 2);
      const double dc = p.dt == DType::kF32 && uni(0, 3) == 0 ? 1000.0 : 0.0;
      const bool full = static_cast<long long>(B) * C * L <= 8000;
      test_cln(p.dt, p.pt, uni(0, 3) != 0, B, C, L, dc, full);
    } else {
      const int N = logu(50000);
      int M = uni(1, 120);
      while (static_cast<long long>(M) * N > 200000 && M > 1) M = std::max(1, M / 2);
      test_rms(p.dt, p.pt, uni(0, 3) != 0, M, N, uni(0, 1) ? uni(1, 16) : 0,
               uni(0, 2) == 0 ? uni(1, 3) : 0);
    }
  }
  std::printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail == 0 ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  // `emu_selftest --cln B C L DC`: one float32 cLN case with gamma / beta, every knob variant.
  if (argc == 6 && std::strcmp(argv[1], "--cln") == 0) {
    test_cln(DType::kF32, DType::kF32, true, std::atoi(argv[2]), std::atoi(argv[3]),
             std::atoi(argv[4]), std::atof(argv[5]), true);
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail == 0 ? 0 : 1;
  }
  if (argc >= 3 && std::strcmp(argv[1], "--random") == 0)
    return run_random(std::atoi(argv[2]), argc >= 4 ? std::strtoull(argv[3], nullptr, 10)
                                                    : std::random_device{}());
  test_blocks_per_sm();
  test_frame_shift();
  for (long long K : {1LL, 37LL, 1024LL, 1025LL, 3000LL}) test_colsum(K, 70, K == 1024 ? 70 : 33);
  // cLN: every launch-table entry (C up to 84, 140, 280, 560, chunked past
  // it), odd L (scalar loads) and L % 8 == 0 (16-byte loads), sequences of
  // more than 32 tiles (several words per lane in the prefix) and of more
  // than 128 (several batches of loads in flight; G = 256 by default).
  struct S {
    int B, C, L;
  };
  const S cln_shapes[] = {{2, 64, 77}, {1, 130, 70}, {2, 200, 64}, {1, 300, 40},
                          {1, 600, 33}, {1, 3, 1100}, {3, 1, 5},
                          {1, 2, 4500}};
  for (const P& p : kTypes) {
    int i = 0;
    for (const S& s : cln_shapes) {
      const double dc = (p.dt == DType::kF32 && i % 2 == 0) ? 1000.0 : 0.0;
      // Long sequences cost the emulator (one fiber per CUDA thread): every
      // knob variant on short ones only; the 4500 frames (141 fp32 tiles:
      // more than 128 prefix words) in fp32 only.
      const bool full = s.L < 1000;
      if (s.L < 4000 || p.dt == DType::kF32)
        test_cln(p.dt, p.pt, i % 3 != 2, s.B, s.C, s.L, dc, full);
      ++i;
    }
  }
  struct R {
    int M, N, pad, off;
  };
  // (70, 1000): 70 persistent blocks, a one-launch dw column sum (the
  // two-stage path, past 1024 partial rows, is test_colsum's).
  const R rms_shapes[] = {{5, 33, 0, 0},    {9, 256, 0, 0},   {70, 1000, 24, 0},
                          {3, 4096, 8, 1},  {2, 8192, 0, 0},  {2, 20000, 0, 0},
                          {2, 40000, 16, 0}, {11, 64, 0, 0},
                          // More row groups than the 80 persistent blocks: the
                          // persistent backward kernels carry dw across rows.
                          {200, 1000, 0, 0}, {1000, 64, 8, 0}};
  for (const P& p : kTypes) {
    int i = 0;
    for (const R& r : rms_shapes) {
      test_rms(p.dt, p.pt, i % 3 != 2, r.M, r.N, r.pad, r.off);
      ++i;
    }
  }
  std::printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail == 0 ? 0 : 1;
}
