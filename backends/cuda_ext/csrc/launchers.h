// Host-side entry points of the CUDA kernels: dtype dispatch, launch
// configuration, workspace layout, error checks.  Plain pointers and sizes
// only (no torch), so binding.cpp is the only file that sees torch and the
// .cu files compile standalone (tests/test_cuda_ext_build.py).
//
// Every function launches on `stream` and throws std::runtime_error with a
// message naming the op on a launch error.  Workspaces are allocated by the
// caller (the torch caching allocator) with the size the *_workspace_bytes
// function returns for the same arguments; the launchers zero what needs it
// on the same stream (cudaMemsetAsync, or a kernel where the call chains its
// launches by programmatic dependent launch: ClnFwdCall::pdl).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace normk {

enum class DType : int { kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3 };

const char* dtype_name(DType t);

// ---- cLN ------------------------------------------------------------------
struct ClnFwdCall {
  DType dtype;        // of x and y
  DType param_dtype;  // of gamma and beta (dtype or its accumulation type)
  const void* x;
  const void* gamma;  // nullable
  const void* beta;   // nullable
  double eps;
  const int64_t* count0;  // nullable (no state)
  const void* mean0;      // acc, nullable
  const void* m20;        // acc, nullable
  void* y;
  void* mean;       // acc (B, L), nullable together with rstd: no backward follows
  void* rstd;       // acc (B, L), nullable
  void* m2_last;    // acc (B,)
  void* mean_last = nullptr;  // acc (B,), nullable: the mean at the last frame
  int64_t B, C, L;
  // Cross-tile prefix group size G in tiles (include/cln_kernels.cuh; the
  // Python side passes backends/cuda_ext/kernels.py's CLN_GROUP_TILES);
  // <= 0: the default G (kClnGroupDefault, 256).
  int64_t group_tiles = 0;
  // Kernel family and its shape (include/cln_stream.cuh; kernels.py's
  // CLN_STREAM_PPR / CLN_STREAM_STAGES): stream_ppr -1 = the register-tile
  // kernels, 0 = automatic, else the 16-byte packs per tile row of the
  // streaming kernel; stream_stages / stream_lead 0 = automatic (the lead:
  // the output warps refill the stages on the TMA path, else 1), else its
  // ring depth S / its producer's lead D.
  int64_t stream_ppr = 0;
  int64_t stream_stages = 0;
  int64_t stream_lead = 0;
  // The streaming kernels' tile copies (kernels.py's CLN_STREAM_TMA): 0 =
  // the TMA (include/tma.cuh) where it applies (sm_90+, 16-byte rows and
  // pointers, C a multiple of its box count), else cp.async; -1 = always
  // cp.async; 1 = the TMA, throwing where it does not apply.
  int64_t stream_tma = 0;
  // The resident forward (include/cln_resident.cuh, kernels.py's CLN_RESIDENT):
  // 0 = where the sequence fits kResidentAutoBytes of shared memory and no
  // streaming setting is forced, 1 = always (throws where it does not fit),
  // -1 = never.
  int64_t resident = 0;
  // The call's launches chained by programmatic dependent launch where the GPU has it
  // (sm_90+; kernels.py's CLN_PDL): 1 = the workspace zeroed by a kernel instead of a
  // memset, and every launch of the call (zeroing, cLN kernel, the backward's column sums)
  // a programmatic dependent of the one before it; 0 = plain launches.
  int64_t pdl = 0;
  // The cross-tile prefix waits' polls (include/cln_kernels.cuh, round_spin; kernels.py's
  // CLN_PREFIX_SPIN): 1 = each lane reloads all of its words not yet ready together, with
  // no sleep; 0 = each word in turn, 20 ns apart.  The outputs are the same.
  int64_t prefix_spin = 0;
  // The float32 frame sums of the first C frames about a shift (include/cln_kernels.cuh,
  // kShiftFrameSums; kernels.py's CLN_FWD_SHIFT): 1 = on, 0 = off (for its A/B and the test
  // that it is needed: a DC offset then costs the first frames D * 6e-8 * sqrt(C)).
  int64_t frame_shift = 1;
};
size_t cln_fwd_workspace_bytes(const ClnFwdCall& c);
void cln_fwd(const ClnFwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream);

struct ClnBwdCall {
  DType dtype;
  DType param_dtype;
  const void* dy;
  const void* x;
  const void* gamma;  // nullable
  const void* mean;
  const void* rstd;
  const int64_t* count;  // nullable
  void* dx;
  void* dgamma;  // acc, nullable
  void* dbeta;   // acc, nullable
  int64_t B, C, L;
  int64_t group_tiles = 0;  // as in ClnFwdCall
  int64_t stream_ppr = 0;
  int64_t stream_stages = 0;
  int64_t stream_lead = 0;
  int64_t stream_tma = 0;
  int64_t pdl = 0;          // as in ClnFwdCall
  int64_t prefix_spin = 0;  // as in ClnFwdCall
};
size_t cln_bwd_workspace_bytes(const ClnBwdCall& c);
void cln_bwd(const ClnBwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// ---- RMSNorm --------------------------------------------------------------
struct RmsFwdCall {
  DType dtype;
  DType param_dtype;
  const void* x;
  int64_t ldx;     // row stride of x, elements
  const void* w;   // nullable
  double eps;
  void* y;
  void* rstd;
  int64_t M, N;
};
void rms_fwd(const RmsFwdCall& c, cudaStream_t stream);

struct RmsBwdCall {
  DType dtype;
  DType param_dtype;
  const void* dy;
  const void* x;
  int64_t ldx;
  const void* w;  // nullable
  const void* rstd;
  void* dx;
  void* dw;  // acc, nullable
  int64_t M, N;
  // Row kernel (include/rmsnorm_kernels.cuh, rms_bwd_row_kernel; kernels.py's
  // RMS_BWD_STAGES): 0 = where it applies, with the automatic ring depth (1,
  // no ring); 1..3 = that many stages (1: no ring; throws where the row kernel does not
  // apply or the ring does not fit); -1 = the general kernel.
  int row_stages = 0;
};
size_t rms_bwd_workspace_bytes(const RmsBwdCall& c);
void rms_bwd(const RmsBwdCall& c, void* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace normk
