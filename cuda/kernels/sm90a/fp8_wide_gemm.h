// The FP8 decode-batch GEMMs on Hopper warpgroup MMAs (sm90a/fp8_wide_gemm.cu, built for sm_90a
// only): y = x @ W^T for 9-64 quantized token rows (fp8_quantize first), plain or SwiGLU, with
// per-tensor, per-channel or 128 x 128 block scales. Callers check hopper_kernels_available()
// (wide_gemm.h) through fp8_wide_supported and fall back otherwise.
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// Token rows the FP8 wide GEMMs serve at most (the wgmma M).
constexpr int32_t kFp8WideMaxRows = 64;

// Whether the kernels serve x [M <= 64, K] @ w^T into y (BF16, y.cols = w.n, or w.n / 2 for
// swiglu) on `sms` SMs: K % 128 == 0, 16-byte aligned operands, N (or I) divisible by one of the
// instantiated tile widths.
bool fp8_wide_supported(const Fp8X& x, const Fp8Weight& w, const Mat& y, bool swiglu, int32_t sms);
// The tile fp8_wide_gemm / fp8_wide_swiglu choose for an N x K weight on `sms` SMs (rows per
// warpgroup, 0: none; K splits over a cluster; whether two blocks share an SM), for tests and
// benchmarks.
struct Fp8WideTile {
  int32_t rows = 0, splits = 0;
  bool two_per_sm = false;
};
Fp8WideTile fp8_wide_tile(int64_t n, int64_t k, bool swiglu, bool block, int32_t sms);
// y = x @ W^T (+ bias, BF16 [N] or null). Throws Error(Unsupported) where not supported.
void fp8_wide_gemm(const Fp8X& x, const Fp8Weight& w, const bf16* bias, Mat y, int32_t sms, const Launch& launch);
// W stacks gate [I, K] over up [I, K]; y[M, I] = silu(x . gate) * (x . up).
void fp8_wide_swiglu(const Fp8X& x, const Fp8Weight& w, Mat y, int32_t sms, const Launch& launch);

}  // namespace inferdesk::cuda
