// Host side of the TMA copies (include/tma.cuh): whether this GPU has them
// and the tensor-map encoding.  cuTensorMapEncodeTiled is a driver API
// function; it is looked up through the runtime (cudaGetDriverEntryPointByVersion)
// so that the extension does not link libcuda itself.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "launch_util.h"

namespace normk {

template <typename T>
struct TmaType;
template <>
struct TmaType<float> {
  static constexpr CUtensorMapDataType v = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
};
template <>
struct TmaType<__half> {
  static constexpr CUtensorMapDataType v = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
};
template <>
struct TmaType<__nv_bfloat16> {
  static constexpr CUtensorMapDataType v = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
};
template <>
struct TmaType<double> {
  static constexpr CUtensorMapDataType v = CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
};

#ifndef NORMK_HOST_EMULATION
using TmaEncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's encoder, or nullptr (a driver older than CUDA 12).  Looked up once.
inline TmaEncodeFn tma_encoder() {
  static const TmaEncodeFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();  // clear it: a missing encoder only disables the TMA path
      return static_cast<TmaEncodeFn>(nullptr);
    }
    return reinterpret_cast<TmaEncodeFn>(p);
  }();
  return fn;
}

// Whether the current device can take the TMA path: compute capability 9.0
// or newer and a driver with the encoder.
inline bool tma_supported() {
  return device_attribute<cudaDevAttrComputeCapabilityMajor>(
             "cudaDeviceGetAttribute(ComputeCapabilityMajor)") >= 9 &&
         tma_encoder() != nullptr;
}
#else
inline bool tma_supported() { return true; }
#endif

// A tiled tensor map of `rank` (2 or 3) dimensions, innermost first: dims
// (elements), strides of dims 1.. (bytes, multiples of 16), the box (elements;
// box[0] * sizeof(T) a multiple of 16, each <= 256).  Out-of-bounds elements
// load as zeros and are not stored.  Throws with `what` on failure.
template <typename T>
void tma_encode(CUtensorMap* map, const void* base, int rank, const uint64_t* dims,
                const uint64_t* strides, const uint32_t* box, const char* what) {
#ifndef NORMK_HOST_EMULATION
  const TmaEncodeFn enc = tma_encoder();
  if (!enc) throw std::runtime_error(std::string("cuda_ext: ") + what + ": no TMA encoder");
  cuuint64_t d[3], s[2];
  cuuint32_t b[3], e[3];
  for (int i = 0; i < rank; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
    e[i] = 1;
    if (i + 1 < rank) s[i] = strides[i];
  }
  // L2 promotion 256 B: the tile rows are 64-512 B, adjacent tiles of a
  // sequence take the neighbouring bytes of each row.
  const CUresult r = enc(map, TmaType<T>::v, static_cast<cuuint32_t>(rank),
                         const_cast<void*>(base), d, s, b, e, CU_TENSOR_MAP_INTERLEAVE_NONE,
                         CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string("cuda_ext: ") + what +
                             ": cuTensorMapEncodeTiled failed (CUresult " + std::to_string(r) +
                             ")");
#else
  normk_emu::emu_tma_encode(map, base, rank, static_cast<int>(sizeof(T)), dims, strides, box);
  (void)what;
#endif
}

}  // namespace normk
