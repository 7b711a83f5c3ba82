// What every kernel launcher of cuda/kernels shares: the Launch it enqueues through (stream, PDL),
// the matrix view Mat and its element types. The family headers (elementwise.h, gemv.h, ...) hold
// the launchers: the contract between cuda/backend and the kernel files.
//
// Every launcher takes `const Launch& launch` and only enqueues work on launch.stream (no
// allocation, no synchronisation, no host reads of device data), so every one of them may be
// captured in a CUDA graph. Sizes are validated by the caller; launchers throw
// inferdesk::Error(Internal) only for a configuration they do not implement (e.g. a head_dim
// without an instantiation) and for launch errors.
//
// Conventions
// - Matrices are row-major with a row stride in elements (stride >= cols), so column slices of a
//   fused tensor (q/k/v of one qkv GEMM output) can be passed without copies.
// - Activations are BF16, except the residual stream and logits, which are F32. Where a launcher
//   takes `Dt`, the tensor may be either.
// - The paged KV cache of one layer is two arrays (K and V) of BF16 laid out
//   [num_blocks][num_kv_heads][block_size][head_dim]; the slot of a token is
//   block_id * block_size + offset. A slot of -1 means "padding row: write nothing".
// - Step metadata (token ids, positions, slots, per-sequence arrays, block tables) lives in
//   device buffers at fixed addresses uploaded by begin_step.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

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

// The stream the launches go to, and whether they use programmatic dependent launch (PDL): a
// kernel may then be scheduled (and prefetch weights) while its predecessor on the stream drains.
// PDL takes effect on devices of compute capability >= 9.0 only (uses_pdl); elsewhere, or with
// pdl false, the launches are plain stream-ordered ones. Captured into a CUDA graph, a PDL launch
// becomes a programmatic edge.
struct Launch {
  cudaStream_t stream = nullptr;
  bool pdl = false;
};

// Whether the current device supports PDL (compute capability >= 9.0; asked once per device).
bool pdl_supported();
// Whether launches through `launch` on the current device use PDL: launch.pdl && pdl_supported().
bool uses_pdl(const Launch& launch);

}  // namespace inferdesk::cuda
