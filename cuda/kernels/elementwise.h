// Elementwise and row-wise ops (elementwise.cu): embedding rows, (add_)RMSNorm, SiLU * up, in-place
// add, row gather, deterministic random fill, conversion to BF16.
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// out[i, :] = table[token_ids[i], :] for i < rows(out). table BF16 [V, H]; out F32 or BF16.
void embed_rows(const Mat& table, const int32_t* token_ids, Mat out, const Launch& launch);

// out = x / sqrt(mean(x^2) + eps) * w, row-wise. x, out F32 or BF16 (may alias); w BF16 [1, cols].
void rms_norm(const Mat& x, const bf16* w, float eps, Mat out, const Launch& launch);

// residual += x; out = rms_norm(residual) * w. residual F32; x, out BF16 (or F32).
void add_rms_norm(Mat residual, const Mat& x, const bf16* w, float eps, Mat out, const Launch& launch);

// out = silu(gate) * up, all BF16 [T, I] (strided).
void silu_mul(const Mat& gate, const Mat& up, Mat out, const Launch& launch);

// inout += x (any F32/BF16 combination, same shape).
void add_inplace(Mat inout, const Mat& x, const Launch& launch);

// out[j, :] = x[rows_idx[j], :] for j < rows(out); x/out F32 or BF16.
void gather_rows(const Mat& x, const int32_t* rows_idx, Mat out, const Launch& launch);

// Uniform values in [-scale, scale] from a counter-based hash of (seed, element index); the same
// seed gives the same values whatever the launch configuration.
void fill_random(Mat t, uint64_t seed, float scale, const Launch& launch);

// dst (BF16, contiguous n elements) = convert(src) where src is `n` contiguous elements of
// F32 (src_kind 0), BF16 (1) or F16 (2) already in device memory.
void convert_to_bf16(const void* src, int32_t src_kind, bf16* dst, int64_t n, const Launch& launch);

}  // namespace inferdesk::cuda
