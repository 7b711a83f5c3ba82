// cuBLASLt FP8 GEMMs (the large-M path of FP8 linear layers): y[M, N] = x[M, K] @ W[N, K]^T with
// E4M3 x and W (quantized activations from fp8_quantize), F32 accumulation, BF16 or F32 output,
// optional BF16 bias. The scales go to cuBLASLt's Hopper scaling modes: per-token x and
// per-channel W as outer vectors (OUTER_VEC_32F; a per-tensor weight scale is broadcast to a
// vector once), block weights as BLK128x128_32F with per-group x as VEC128_32F (128-wide groups
// along K). Plans (descriptors and the heuristic's first algorithm) are cached per shape; a shape
// cuBLASLt has no algorithm for is remembered, and run() returns false for it (the caller then
// takes another kernel).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "cuda/backend/context.h"
#include "cuda/kernels/fp8_linear.h"

namespace inferdesk::cuda {

class Fp8Gemm {
 public:
  explicit Fp8Gemm(CudaContext& ctx);
  ~Fp8Gemm();
  Fp8Gemm(const Fp8Gemm&) = delete;
  Fp8Gemm& operator=(const Fp8Gemm&) = delete;

  // Whether this device and these operands can take the cuBLASLt path at all (compute capability
  // 9.0: the outer-vector and block scaling modes exist on Hopper only; 16-byte alignment).
  bool eligible(const Fp8X& x, const Fp8Weight& w, const Mat& y) const;
  // Enqueues the GEMM on the context's stream; false (nothing enqueued) when cuBLASLt has no
  // algorithm for it. The first call of a weight or shape may allocate (outside graph captures).
  bool run(const Fp8X& x, const Fp8Weight& w, const bf16* bias, Mat y);

 private:
  struct Plan;
  // (m, n, k, ldx, ldy, F32 output, bias, block scales)
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, bool>;
  struct Pointers {
    const float* a_scale;
    const float* b_scale;
    const bf16* bias;
  };
  Plan* plan(const Key& key, const Pointers& ptr);
  static void set_pointers(cublasLtMatmulDesc_t op, const Pointers& p);
  // The weight scales in the layout cuBLASLt reads (a vector for per-tensor scales, rows padded
  // to a multiple of 4 groups for block scales), made once per weight.
  const float* weight_scales(const Fp8Weight& w);

  CudaContext& ctx_;
  bool hopper_ = false;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  size_t workspace_bytes_ = 32u << 20;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::map<const float*, DeviceBuffer> scales_;
};

}  // namespace inferdesk::cuda
