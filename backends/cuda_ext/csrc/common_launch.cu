// Launch helpers shared by all ops: dtype names, the SM count, and the
// deterministic column-sum reduction of per-tile / per-block partials.
#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "launch_util.h"
#include "reduce_kernels.cuh"

namespace normk {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kF64: return "float64";
  }
  return "unknown";
}

int sm_count() {
  return device_attribute<cudaDevAttrMultiProcessorCount>(
      "cudaDeviceGetAttribute(MultiProcessorCount)");
}

int blocks_per_sm(const void* kernel, int threads, size_t smem) {
  int dev = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  using Key = std::tuple<int, const void*, int, size_t>;
  static std::mutex mu;
  static std::map<Key, int> cache;                         // blocks per SM
  static std::map<std::pair<int, const void*>, size_t> opted;  // the kernel's opt-in so far
  std::lock_guard<std::mutex> lock(mu);
  const Key key{dev, kernel, threads, smem};
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  // The opt-in only grows: a smaller later request must not lower the
  // limit that a cached larger configuration launches with.
  size_t& have = opted[{dev, kernel}];
  if (smem > 48 * 1024 && smem > have) {
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
    have = smem;
  }
  int per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  cache.emplace(key, per_sm);
  return per_sm;
}

bool pdl_supported() {
  return device_attribute<cudaDevAttrComputeCapabilityMajor>(
             "cudaDeviceGetAttribute(ComputeCapabilityMajor)") >= 9;
}

void zero_workspace(void* p, size_t bytes, cudaStream_t stream, bool pdl, const char* what) {
  if (!pdl) {
    check_cuda(cudaMemsetAsync(p, 0, bytes, stream), what);
    return;
  }
  if (bytes % 4 != 0 || !aligned16(p))
    throw std::runtime_error(std::string("cuda_ext: ") + what +
                             ": the workspace to zero is not 16-byte aligned 4-byte words");
  ZeroArgs a{static_cast<unsigned*>(p), static_cast<long long>(bytes / 4)};
  // One 16-byte store per thread per round (a call's flags: 4-16 bytes per tile), at most
  // 1024 blocks looping over longer workspaces.
  const long long blocks = std::max(1LL, std::min(cdiv(a.n4, 4 * 256), 1024LL));
  launch_ex(&zero_words_kernel, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream, true,
            false, a, what);
}

namespace {
// Up to kOneLaunchRows rows, one launch of 32-warp blocks (each warp sums at
// most 32 rows, 4 loads in flight per thread): the RMSNorm dw partials of
// one wave of blocks (K = 132-1056 on an H200) took two launches of 8-warp
// blocks before, 2 x 4.4 us at (2048, 4096) bf16, against 6.3 us for
// torch.sum of the same partials (torch.profiler,
// bench/results/nvidia-h200-s6-prof-rms-kernels.log).
// Longer: split the K rows into S segments of `seg` rows so that the first
// launch has about 512 blocks of 8 warps (enough to cover an H200's 132 SMs
// a few times) while every block still sums >= 64 rows; a second launch
// sums the S segments.  Depends only on (K, W): the summation order, and so
// the result, is reproducible on any GPU.
constexpr long long kOneLaunchRows = 1024;

void colsum_split(long long K, int W, long long& S, long long& seg) {
  if (K <= kOneLaunchRows) {
    S = 1;
    seg = K;
    return;
  }
  const long long bx = cdiv(W, 32);
  S = std::max(1LL, std::min(cdiv(K, 64), cdiv(512, bx)));
  seg = cdiv(K, S);
  S = cdiv(K, seg);
}
}  // namespace

size_t colsum_scratch_elems(long long K, int W) {
  long long S, seg;
  colsum_split(K, W, S, seg);
  return S > 1 ? static_cast<size_t>(S) * W : 0;
}

template <typename A>
void colsum(const A* in, long long K, int W, A* out0, A* out1, int split, A* mid,
            cudaStream_t stream, bool pdl) {
  long long S, seg;
  colsum_split(K, W, S, seg);
  const unsigned bx = static_cast<unsigned>(cdiv(W, 32));
  auto* wide = &colsum_kernel<A, 32>;
  auto* narrow = &colsum_kernel<A, 8>;
  if (S == 1) {
    ColsumArgs<A> a{in, K, W, K, out0, out1, split, 0};
    launch_ex(wide, dim3(bx, 1), dim3(1024), 0, stream, pdl, false, a, "column-sum kernel launch");
    check_launch("column-sum kernel launch");
    return;
  }
  ColsumArgs<A> a{in, K, W, seg, mid, mid + W, W, W};
  launch_ex(narrow, dim3(bx, static_cast<unsigned>(S)), dim3(256), 0, stream, pdl, false, a,
            "column-sum (stage 1) kernel launch");
  check_launch("column-sum (stage 1) kernel launch");
  ColsumArgs<A> b{mid, S, W, S, out0, out1, split, 0};
  launch_ex(narrow, dim3(bx, 1), dim3(256), 0, stream, pdl, false, b,
            "column-sum (stage 2) kernel launch");
  check_launch("column-sum (stage 2) kernel launch");
}

template void colsum<float>(const float*, long long, int, float*, float*, int, float*,
                            cudaStream_t, bool);
template void colsum<double>(const double*, long long, int, double*, double*, int, double*,
                             cudaStream_t, bool);

}  // namespace normk
