// The CPU backend's inner loops, compiled once per instruction set (kernels_scalar.cpp,
// kernels_avx2.cpp, kernels_avx512.cpp from the same kernels_impl.h) and picked at run time.
// Kernels are single-threaded; the ops in cpu_ops_*.cpp split work across the thread pool.
#pragma once

#include <cstdint>

#include "core/util/dtype.h"

namespace inferdesk::cpu {

enum class Isa { Scalar, Avx2, Avx512 };
const char* isa_name(Isa isa);
// The best instruction set this CPU and this build support.
Isa detect_isa();

// out[t, o] = sum_k x[t, k] * w[o, k] (+ bias[o]) for t < T and o in [o_begin, o_end).
struct LinearArgs {
  const float* x = nullptr;
  int64_t x_stride = 0;
  const void* w = nullptr;
  DType w_dtype = DType::F32;  // F32, F16, BF16, or F8E4M3 read as value * 2^-8 (the caller rescales)
  int64_t w_stride = 0;        // elements
  const void* bias = nullptr;  // [O] or null
  DType bias_dtype = DType::F32;
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t T = 0;  // rows of x
  int64_t K = 0;  // in features
  int64_t O = 0;  // out features
};

// One work item of paged attention: `rows` consecutive query rows of one sequence (up to
// kAttentionMaxRows) times the `group` query heads that share kv head `kv_head`. The rows are
// consecutive positions: row r is at position key_end + r and attends over keys [0, key_end + r],
// or with a sliding window w > 0 over (key_end + r - w, key_end + r]. Processing several rows
// together reads each K/V row once for all of them.
constexpr int kAttentionMaxRows = 4;
struct AttentionItem {
  const float* q = nullptr;  // row 0, first query head of the group; heads are head_dim apart
  int64_t q_stride = 0;      // floats between rows
  float* out = nullptr;      // same layout as q
  int64_t out_stride = 0;
  int32_t rows = 1;
  int32_t group = 1;
  int32_t head_dim = 0;
  float scale = 1.0f;
  const float* k_cache = nullptr;  // layer base, [num_blocks, kv_heads, block_size, head_dim]
  const float* v_cache = nullptr;
  int32_t block_size = 16;
  int32_t num_kv_heads = 1;
  int32_t kv_head = 0;
  const int32_t* block_table = nullptr;
  int64_t key_end = -1;        // row 0's position (its last key)
  int32_t sliding_window = 0;  // 0: full causal
  float* scratch = nullptr;    // attention_scratch_floats(head_dim, block_size) floats
};

inline int64_t attention_scratch_floats(int64_t head_dim, int64_t block_size) {
  return int64_t{16} * (head_dim + block_size) + 16;
}

struct KernelTable {
  Isa isa = Isa::Scalar;
  // linear over output rows [o_begin, o_end) for all T rows; weights read from memory once.
  void (*linear)(const LinearArgs& a, int64_t o_begin, int64_t o_end) = nullptr;
  // Row helpers (n elements).
  void (*convert_row)(const void* src, DType dtype, float* dst, int64_t n) = nullptr;
  // out = x * rsqrt(mean(x^2) + eps) * w; x and out may alias.
  void (*rms_norm_row)(const float* x, const void* w, DType w_dtype, float eps, float* out, int64_t n) = nullptr;
  // out = silu(gate) * up
  void (*silu_mul_row)(const float* gate, const float* up, float* out, int64_t n) = nullptr;
  // y += a * x
  void (*axpy_row)(float a, const float* x, float* y, int64_t n) = nullptr;
  void (*attention)(const AttentionItem& item) = nullptr;
};

KernelTable kernels_scalar();
KernelTable kernels_avx2();    // only valid where detect_isa() >= Avx2
KernelTable kernels_avx512();  // only valid where detect_isa() == Avx512
KernelTable kernels_for(Isa isa);

}  // namespace inferdesk::cpu
