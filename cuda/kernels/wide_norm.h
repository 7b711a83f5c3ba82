// WideNorm: a residual add + RMSNorm split between the wide GEMMs that produce and consume it
// (sm90a/wide_gemm.h), and its row scaling done alone for other consumers (elementwise.cu).
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// A residual add + RMSNorm split across two wide GEMMs (the backend's linear_add_rms_norm):
// - Producer (k-split with `resid`): resid[M, N] (F32) += bf16(x @ W^T); y = bf16(resid *
//   gamma) per column, the row not yet scaled; ss_out[tile][64] = sum over the tile's N columns of
//   resid^2 per row (tiles of wide_gemm_ksplit_tiles; one writer each: deterministic).
// - Consumer (k-split or SwiGLU with `ss_in`, x = that y): every output row r is scaled by
//   1 / sqrt(sum_t ss_in[t][r] / norm_k + eps) before the SwiGLU or the store; since the scale is
//   per row it commutes with the product: the result is rmsnorm(resid) * gamma @ W^T.
struct WideNorm {
  float* resid = nullptr;  // producer
  int64_t ld_resid = 0;
  const bf16* gamma = nullptr;
  float* ss_out = nullptr;
  const float* ss_in = nullptr;  // consumer
  int32_t ss_tiles = 0;
  int32_t norm_k = 0;
  float eps = 0.0f;
};
// Rows of partial sums the producer writes per token row: one per tile (64 floats each).
constexpr int32_t kWideNormRows = 64;
// A WideNorm's scaling done by itself (elementwise.cu), for a consumer that is not a wide GEMM:
// h [M <= 64, K] BF16 rows *= the consumer's scale (the same partials in the same order).
void wide_norm_scale_rows(Mat h, const float* ss, int32_t tiles, int32_t norm_k, float eps, const Launch& launch);

}  // namespace inferdesk::cuda
