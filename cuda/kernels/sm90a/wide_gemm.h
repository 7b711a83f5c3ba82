// TEMPORARY shim until the kernels header split lands.
#pragma once
#include "cuda/kernels/kernels.h"
namespace inferdesk::cuda {
inline bool hopper_kernels_available() { return skinny_gemm_available(); }
inline bool wide_gemm_swiglu_supported(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int32_t sms) {
  return wide_gemm_supported(x, w, n, k, y, true, sms);
}
inline void wide_gemm_swiglu(const Mat& x, const bf16* w, int64_t n, int64_t k, Mat y, int32_t sms, cudaStream_t s,
                             const WideNorm* norm = nullptr) {
  wide_gemm(x, w, n, k, y, true, sms, s, 1, norm);
}
}  // namespace inferdesk::cuda
