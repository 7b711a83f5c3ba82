// The types the kernel launchers share: BF16, the element type tag Dt and the strided matrix view
// Mat, with the conventions every op family follows.
//
// Conventions
// - Matrices are row-major with a row stride in elements (stride >= cols), so column slices of a
//   fused tensor (q/k/v of one qkv GEMM output) can be passed without copies.
// - Activations are BF16, except the residual stream and logits, which are F32. Where a launcher
//   takes `Dt`, the tensor may be either.
// - The paged KV cache of one layer is two arrays (K and V) of BF16, or of E4M3 bytes with the
//   layer's scales (kv_format.h), laid out
//   [num_blocks][num_kv_heads][block_size][head_dim]; the slot of a token is
//   block_id * block_size + offset. A slot of -1 means "padding row: write nothing".
// - Step metadata (token ids, positions, slots, per-sequence arrays, block tables) lives in
//   device buffers at fixed addresses uploaded by begin_step.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace inferdesk::cuda {

using bf16 = __nv_bfloat16;

enum class Dt : int32_t { F32 = 0, BF16 = 1 };

// A strided 2-D device matrix of F32 or BF16.
struct Mat {
  void* data = nullptr;
  Dt dt = Dt::BF16;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
};

}  // namespace inferdesk::cuda
