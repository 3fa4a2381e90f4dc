// The torch-facing binding: checks, device guard, stream, workspace, and a
// call into the framework-free launchers (launchers.h).  The raw-kernel
// contract is common/kernel_api.py; common/ has already validated the
// arguments, so these checks are a safety net for direct callers, with
// messages that say what to change.
//
// The stream comes from c10/cuda/CUDAStream.h (c10::cuda::getCurrentCUDAStream,
// which at::cuda::getCurrentCUDAStream re-exports): unlike ATen/cuda/
// CUDAContext.h it needs no cuBLAS / cuSPARSE headers, so this file also
// syntax-checks on a machine with only the CUDA runtime headers.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

#include <algorithm>
#include <optional>
#include <string>

#include "launchers.h"

namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;

const char* kDtypes = "float32, float16, bfloat16 or float64";

// The checks' messages are made of strings only: numbers, shapes, devices and dtypes go
// through these helpers (std::to_string, Device::str, c10::toString), never an ostream.  On
// the H200 machine (torch 2.11) the extension is built by its environment's
// CXX=/opt/gcc/bin/g++ and linked with its own static copy of libstdc++
// (std::ostream::_M_insert<long> is inside the .so; ldd lists no libstdc++), and a
// TORCH_CHECK that printed an int or a shape there crashed the process (SIGSEGV in that copy's
// codecvt) instead of raising; strings alone raised (bench/probe_check51b.py,
// bench/results/NOTES.md 52, 53).
std::string num(int64_t v) { return std::to_string(v); }
std::string dims(at::IntArrayRef s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}
std::string dev(const Tensor& t) { return t.device().str(); }
const char* dname(at::ScalarType s) { return c10::toString(s); }

normk::DType to_dtype(at::ScalarType s, const char* op, const char* name) {
  switch (s) {
    case at::kFloat: return normk::DType::kF32;
    case at::kHalf: return normk::DType::kF16;
    case at::kBFloat16: return normk::DType::kBF16;
    case at::kDouble: return normk::DType::kF64;
    default:
      TORCH_CHECK(false, "cuda_ext ", op, ": ", name, " has dtype ", dname(s), "; the cuda_ext backend "
                  "supports ", kDtypes, " (use another backend or cast the input)");
  }
}

at::ScalarType acc_of(at::ScalarType s) { return s == at::kDouble ? at::kDouble : at::kFloat; }

void check_on(const Tensor& t, const Tensor& x, const char* op, const char* name) {
  TORCH_CHECK(t.is_cuda(), "cuda_ext ", op, ": ", name, " must be a CUDA tensor, got one on ",
              dev(t));
  TORCH_CHECK(t.device() == x.device(), "cuda_ext ", op, ": ", name, " is on ", dev(t),
              " but x is on ", dev(x), "; move it to x's device");
}

void check_tensor(const Tensor& t, const Tensor& x, at::IntArrayRef shape, at::ScalarType dtype,
                  const char* op, const char* name) {
  check_on(t, x, op, name);
  TORCH_CHECK(t.sizes() == shape, "cuda_ext ", op, ": ", name, " has shape ", dims(t.sizes()),
              ", expected ", dims(shape));
  TORCH_CHECK(t.scalar_type() == dtype, "cuda_ext ", op, ": ", name, " has dtype ",
              dname(t.scalar_type()), ", expected ", dname(dtype));
  TORCH_CHECK(t.is_contiguous(), "cuda_ext ", op, ": ", name,
              " must be contiguous (call .contiguous() first)");
}

// A parameter: (n,), contiguous, dtype x's or its accumulation dtype.
void check_param(const Tensor& p, const Tensor& x, int64_t n, const char* op, const char* name) {
  check_on(p, x, op, name);
  TORCH_CHECK(p.dim() == 1 && p.size(0) == n, "cuda_ext ", op, ": ", name, " must have shape (",
              num(n), ",), got ", dims(p.sizes()));
  TORCH_CHECK(p.scalar_type() == x.scalar_type() || p.scalar_type() == acc_of(x.scalar_type()),
              "cuda_ext ", op, ": ", name, " has dtype ", dname(p.scalar_type()),
              "; it must be x's dtype (", dname(x.scalar_type()), ") or ",
              dname(acc_of(x.scalar_type())));
  TORCH_CHECK(p.is_contiguous(), "cuda_ext ", op, ": ", name, " must be contiguous");
}

// gamma and beta must share one dtype in the kernels; a mixed pair (rare)
// is brought to the accumulation dtype (a copy of C values).
normk::DType param_dtype(const Tensor& x, OptTensor& a, OptTensor& b, const char* op) {
  if (a && b && a->scalar_type() != b->scalar_type()) {
    a = a->to(acc_of(x.scalar_type()));
    b = b->to(acc_of(x.scalar_type()));
  }
  if (a) return to_dtype(a->scalar_type(), op, "gamma");
  if (b) return to_dtype(b->scalar_type(), op, "beta");
  return to_dtype(x.scalar_type(), op, "x");
}

// Non-const, so that it also serves the optional outputs (converts to const void* for inputs).
void* ptr_or_null(const OptTensor& t) { return t ? t->data_ptr() : nullptr; }

Tensor workspace(const Tensor& x, size_t bytes) {
  return at::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))},
                   x.options().dtype(at::kByte));
}

// The cLN input: a non-empty, contiguous (B, C, T) CUDA tensor.
// The sizes of a cLN call and the kernel knobs from kernels.py (launchers.h).
struct ClnKnobs {
  int64_t group_tiles, stream_ppr, stream_stages, stream_lead, stream_tma, pdl, prefix_spin;
};
template <typename Call>
void set_cln_sizes_and_knobs(Call& c, const Tensor& x, const ClnKnobs& k) {
  c.B = x.size(0);
  c.C = x.size(1);
  c.L = x.size(2);
  c.group_tiles = k.group_tiles;
  c.stream_ppr = k.stream_ppr;
  c.stream_stages = k.stream_stages;
  c.stream_lead = k.stream_lead;
  c.stream_tma = k.stream_tma;
  c.pdl = k.pdl;
  c.prefix_spin = k.prefix_spin;
}

void check_cln_input(const Tensor& x, const char* op) {
  TORCH_CHECK(x.is_cuda(), "cuda_ext ", op, ": x must be a CUDA tensor, got one on ", dev(x));
  TORCH_CHECK(x.dim() == 3, "cuda_ext ", op, ": x must be (B, C, T), got shape ", dims(x.sizes()));
  TORCH_CHECK(x.numel() > 0, "cuda_ext ", op, ": empty input (common/ handles it without a launch)");
  TORCH_CHECK(x.is_contiguous(), "cuda_ext ", op, ": x must be contiguous (call .contiguous())");
}

void cln_forward(const Tensor& x, OptTensor gamma, OptTensor beta, double eps,
                 const OptTensor& count0, const OptTensor& mean0, const OptTensor& m2_0,
                 const Tensor& y, const OptTensor& mean, const OptTensor& rstd,
                 const Tensor& m2_last, int64_t group_tiles, int64_t stream_ppr,
                 int64_t stream_stages, int64_t stream_lead, int64_t resident,
                 int64_t stream_tma, int64_t pdl, int64_t prefix_spin,
                 const OptTensor& mean_last, int64_t frame_shift) {
  const char* op = "cln_forward";
  check_cln_input(x, op);
  const auto dt = to_dtype(x.scalar_type(), op, "x");
  const auto acc = acc_of(x.scalar_type());
  const int64_t B = x.size(0), C = x.size(1), L = x.size(2);
  if (gamma) check_param(*gamma, x, C, op, "gamma");
  if (beta) check_param(*beta, x, C, op, "beta");
  check_tensor(y, x, x.sizes(), x.scalar_type(), op, "y");
  TORCH_CHECK(mean.has_value() == rstd.has_value(), "cuda_ext ", op,
              ": the per-frame statistics are (mean, rstd): pass both or none");
  if (mean) check_tensor(*mean, x, {B, L}, acc, op, "mean");
  if (rstd) check_tensor(*rstd, x, {B, L}, acc, op, "rstd");
  check_tensor(m2_last, x, {B}, acc, op, "m2_last");
  if (mean_last) check_tensor(*mean_last, x, {B}, acc, op, "mean_last");
  const bool has_state = count0.has_value();
  TORCH_CHECK(has_state == mean0.has_value() && has_state == m2_0.has_value(), "cuda_ext ", op,
              ": the state is (count, mean, m2): pass all three or none");
  if (has_state) {
    check_tensor(*count0, x, {B}, at::kLong, op, "state count");
    check_tensor(*mean0, x, {B}, acc, op, "state mean");
    check_tensor(*m2_0, x, {B}, acc, op, "state m2");
  }
  const c10::cuda::CUDAGuard guard(x.device());
  const auto pdt = param_dtype(x, gamma, beta, op);
  normk::ClnFwdCall c{};
  c.dtype = dt;
  c.param_dtype = pdt;
  c.x = x.data_ptr();
  c.gamma = ptr_or_null(gamma);
  c.beta = ptr_or_null(beta);
  c.eps = eps;
  c.count0 = has_state ? count0->data_ptr<int64_t>() : nullptr;
  c.mean0 = ptr_or_null(mean0);
  c.m20 = ptr_or_null(m2_0);
  c.y = y.data_ptr();
  c.mean = ptr_or_null(mean);
  c.rstd = ptr_or_null(rstd);
  c.m2_last = m2_last.data_ptr();
  c.mean_last = ptr_or_null(mean_last);
  set_cln_sizes_and_knobs(c, x,
                          {group_tiles, stream_ppr, stream_stages, stream_lead, stream_tma, pdl,
                           prefix_spin});
  c.resident = resident;
  c.frame_shift = frame_shift;
  const size_t bytes = normk::cln_fwd_workspace_bytes(c);
  const Tensor ws = workspace(x, bytes);
  normk::cln_fwd(c, ws.data_ptr(), bytes, c10::cuda::getCurrentCUDAStream());
}

void cln_backward(const Tensor& dy, const Tensor& x, OptTensor gamma, const Tensor& mean,
                  const Tensor& rstd, const OptTensor& count, const Tensor& dx,
                  const OptTensor& dgamma, const OptTensor& dbeta, int64_t group_tiles,
                  int64_t stream_ppr, int64_t stream_stages, int64_t stream_lead,
                  int64_t stream_tma, int64_t pdl, int64_t prefix_spin) {
  const char* op = "cln_backward";
  check_cln_input(x, op);
  const auto dt = to_dtype(x.scalar_type(), op, "x");
  const auto acc = acc_of(x.scalar_type());
  const int64_t B = x.size(0), C = x.size(1), L = x.size(2);
  check_tensor(dy, x, x.sizes(), x.scalar_type(), op, "dy");
  if (gamma) check_param(*gamma, x, C, op, "gamma");
  check_tensor(mean, x, {B, L}, acc, op, "mean");
  check_tensor(rstd, x, {B, L}, acc, op, "rstd");
  if (count) check_tensor(*count, x, {B}, at::kLong, op, "count");
  check_tensor(dx, x, x.sizes(), x.scalar_type(), op, "dx");
  if (dgamma) check_tensor(*dgamma, x, {C}, acc, op, "dgamma");
  if (dbeta) check_tensor(*dbeta, x, {C}, acc, op, "dbeta");
  const c10::cuda::CUDAGuard guard(x.device());
  OptTensor none;
  const auto pdt = param_dtype(x, gamma, none, op);
  normk::ClnBwdCall c{};
  c.dtype = dt;
  c.param_dtype = pdt;
  c.dy = dy.data_ptr();
  c.x = x.data_ptr();
  c.gamma = ptr_or_null(gamma);
  c.mean = mean.data_ptr();
  c.rstd = rstd.data_ptr();
  c.count = count ? count->data_ptr<int64_t>() : nullptr;
  c.dx = dx.data_ptr();
  c.dgamma = dgamma ? dgamma->data_ptr() : nullptr;
  c.dbeta = dbeta ? dbeta->data_ptr() : nullptr;
  set_cln_sizes_and_knobs(c, x,
                          {group_tiles, stream_ppr, stream_stages, stream_lead, stream_tma, pdl,
                           prefix_spin});
  const size_t bytes = normk::cln_bwd_workspace_bytes(c);
  const Tensor ws = workspace(x, bytes);
  normk::cln_bwd(c, ws.data_ptr(), bytes, c10::cuda::getCurrentCUDAStream());
}

// x: (M, N) with unit column stride and row stride >= N (rows may be
// strided, never copied).  Returns the row stride to use.
int64_t check_rows(const Tensor& x, const char* op) {
  TORCH_CHECK(x.is_cuda(), "cuda_ext ", op, ": x must be a CUDA tensor, got one on ", dev(x));
  TORCH_CHECK(x.dim() == 2, "cuda_ext ", op, ": x must be (M, N), got shape ", dims(x.sizes()));
  TORCH_CHECK(x.numel() > 0, "cuda_ext ", op, ": empty input (common/ handles it without a launch)");
  const int64_t M = x.size(0), N = x.size(1);
  TORCH_CHECK(N == 1 || x.stride(1) == 1, "cuda_ext ", op,
              ": x's last dimension must be contiguous (stride 1), got strides ", dims(x.strides()));
  if (M == 1) return N;
  TORCH_CHECK(x.stride(0) >= N, "cuda_ext ", op, ": x's row stride ", num(x.stride(0)),
              " is smaller than the row length ", num(N), " (overlapping or transposed rows; call "
              ".contiguous() first)");
  return x.stride(0);
}

void rmsnorm_forward(const Tensor& x, OptTensor weight, double eps, const Tensor& y,
                     const Tensor& rstd) {
  const char* op = "rmsnorm_forward";
  const int64_t ldx = check_rows(x, op);
  const auto dt = to_dtype(x.scalar_type(), op, "x");
  const int64_t M = x.size(0), N = x.size(1);
  if (weight) check_param(*weight, x, N, op, "weight");
  check_tensor(y, x, {M, N}, x.scalar_type(), op, "y");
  check_tensor(rstd, x, {M}, acc_of(x.scalar_type()), op, "rstd");
  const c10::cuda::CUDAGuard guard(x.device());
  normk::RmsFwdCall c{};
  c.dtype = dt;
  c.param_dtype = weight ? to_dtype(weight->scalar_type(), op, "weight") : dt;
  c.x = x.data_ptr();
  c.ldx = ldx;
  c.w = ptr_or_null(weight);
  c.eps = eps;
  c.y = y.data_ptr();
  c.rstd = rstd.data_ptr();
  c.M = M;
  c.N = N;
  normk::rms_fwd(c, c10::cuda::getCurrentCUDAStream());
}

void rmsnorm_backward(const Tensor& dy, const Tensor& x, OptTensor weight, const Tensor& rstd,
                      const Tensor& dx, const OptTensor& dw, int64_t row_stages) {
  const char* op = "rmsnorm_backward";
  const int64_t ldx = check_rows(x, op);
  const auto dt = to_dtype(x.scalar_type(), op, "x");
  const auto acc = acc_of(x.scalar_type());
  const int64_t M = x.size(0), N = x.size(1);
  check_tensor(dy, x, {M, N}, x.scalar_type(), op, "dy");
  if (weight) check_param(*weight, x, N, op, "weight");
  check_tensor(rstd, x, {M}, acc, op, "rstd");
  check_tensor(dx, x, {M, N}, x.scalar_type(), op, "dx");
  if (dw) check_tensor(*dw, x, {N}, acc, op, "dw");
  const c10::cuda::CUDAGuard guard(x.device());
  normk::RmsBwdCall c{};
  c.dtype = dt;
  c.param_dtype = weight ? to_dtype(weight->scalar_type(), op, "weight") : dt;
  c.dy = dy.data_ptr();
  c.x = x.data_ptr();
  c.ldx = ldx;
  c.w = ptr_or_null(weight);
  c.rstd = rstd.data_ptr();
  c.dx = dx.data_ptr();
  c.dw = dw ? dw->data_ptr() : nullptr;
  c.M = M;
  c.N = N;
  c.row_stages = static_cast<int>(std::min<int64_t>(std::max<int64_t>(row_stages, -1), 64));
  const size_t bytes = normk::rms_bwd_workspace_bytes(c);
  const Tensor ws = workspace(x, bytes);
  normk::rms_bwd(c, ws.data_ptr(), bytes, c10::cuda::getCurrentCUDAStream());
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "cLN and RMSNorm CUDA kernels (the raw-kernel contract of common/kernel_api.py)";
  m.def("cln_forward", &cln_forward, py::arg("x"), py::arg("gamma"), py::arg("beta"),
        py::arg("eps"), py::arg("count0"), py::arg("mean0"), py::arg("m2_0"), py::arg("y"),
        py::arg("mean"), py::arg("rstd"), py::arg("m2_last"), py::arg("group_tiles"),
        py::arg("stream_ppr"), py::arg("stream_stages"), py::arg("stream_lead"),
        py::arg("resident") = 0, py::arg("stream_tma") = 0, py::arg("pdl") = 0,
        py::arg("prefix_spin") = 0, py::arg("mean_last") = py::none(),
        py::arg("frame_shift") = 1);
  m.def("cln_backward", &cln_backward, py::arg("dy"), py::arg("x"), py::arg("gamma"),
        py::arg("mean"), py::arg("rstd"), py::arg("count"), py::arg("dx"), py::arg("dgamma"),
        py::arg("dbeta"), py::arg("group_tiles"), py::arg("stream_ppr"), py::arg("stream_stages"),
        py::arg("stream_lead"), py::arg("stream_tma") = 0, py::arg("pdl") = 0,
        py::arg("prefix_spin") = 0);
  m.def("rmsnorm_forward", &rmsnorm_forward, py::arg("x"), py::arg("weight"), py::arg("eps"),
        py::arg("y"), py::arg("rstd"));
  m.def("rmsnorm_backward", &rmsnorm_backward, py::arg("dy"), py::arg("x"), py::arg("weight"),
        py::arg("rstd"), py::arg("dx"), py::arg("dw"),
        py::arg("row_stages") = 0);
}
