// FP8 experts (moe_fp8_small.cu, moe_fp8_grouped.cu): E4M3 expert weights with per-tensor,
// per-channel or 128 x 128 block scales, activations quantized to E4M3 per token (dynamic) or per
// token and 128-wide group (block weights), exactly as fp8_linear.h defines them and the CPU
// backend's experts compute them: gate and up accumulated in F32, silu(gate) * up kept in F32 and
// quantized for the down projection (no BF16 rounding in between, as the CPU), expert outputs in
// F32, the slots of a token summed in slot order by moe_combine (moe.h).
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/moe.h"

namespace inferdesk::cuda {

// The FP8 experts of one layer as device arrays of 3 * num_experts pointers: codes w[m * E + e]
// and F32 scales s[m * E + e] of matrix m (0 gate [I, H], 1 up [I, H], 2 down [H, I], contiguous
// rows) of expert e. Scales: per_row[m] one per row, else one per matrix; block: [ceil(rows / 128)]
// [ceil(cols / 128)] tiles (and 128-wide activation groups), the same for the three matrices.
struct MoeFp8Table {
  const uint8_t* const* w = nullptr;
  const float* const* s = nullptr;
  int32_t num_experts = 0;
  int64_t hidden = 0, inter = 0;
  bool block = false;
  bool per_row[3] = {true, true, true};
};

// Sizes the small and grouped FP8 kernels serve: whole 16-byte chunks of E4M3 codes per row (every
// weight pointer 16-byte aligned, checked by the backend). K need not be a multiple of 128.
bool moe_fp8_kernels_supported(int64_t hidden, int64_t inter);

// Small batches (T <= kMoeSmallMaxTokens, decode): per (16-row tile, pair) block, the pair's
// expert is multiplied with every token routed to it (the 8 tokens are the MMA's 8 columns) by the
// block of the first pair routed to it (the others exit), so each chosen expert's weights are read
// once per step. The activation quantization is fused (each block derives the scales of its tokens
// from the BF16 x or the F32 act rows, in L2). No allocation or synchronisation: capturable.
struct MoeFp8SmallArgs : MoeStepArgs {
  MoeFp8Table fp8;
  float* act = nullptr;       // scratch [T * top_k, inter]
  float* slot_out = nullptr;  // scratch [T * top_k, hidden]
};
void moe_fp8_experts_small(const MoeFp8SmallArgs& a, const Launch& launch);

// Medium batches (moe.h's grouped path with E4M3 MMAs): the pairs sorted by expert, x quantized
// once per token (xq), a gate/up kernel over (16-row tile, expert) blocks in passes of 32 pairs
// into act (F32, sorted order), act quantized (aq), the down kernel into y, then moe_combine.
// T * top_k <= max_pairs. Capturable, a grid that depends only on the shapes.
struct MoeFp8GroupedArgs : MoeStepArgs {
  MoeFp8Table fp8;
  int32_t* counts = nullptr;    // [num_experts]
  int32_t* offsets = nullptr;   // [num_experts + 1]
  int32_t* order = nullptr;     // [max_pairs]
  int32_t* position = nullptr;  // [max_pairs]
  Fp8X xq;                      // rows >= T, cols hidden
  float* act = nullptr;         // [max_pairs, inter]
  Fp8X aq;                      // rows max_pairs, cols inter
  float* y = nullptr;           // [max_pairs, hidden]
  int64_t max_pairs = 0;
};
void moe_fp8_experts_grouped(const MoeFp8GroupedArgs& a, const Launch& launch);

// E4M3 quantization of rows for the expert paths (one block per row). Source rows: BF16 or F32
// (src_f32), row r read from src row map(r) = order ? order[r] / top_k : r; with swiglu (F32
// source) the value of column c is silu(src[c]) * src[up_offset + c]. Rows r >= *count (when
// count is not null) or >= rows are left alone. Scales: per row (group false) or per 128-wide group,
// laid out [groups][out.rows] (Fp8X) or, with segments (offsets of E expert segments, device),
// segment e's [groups][n_e] block at moe_fp8_segment_scales: what cuBLASLt reads per expert GEMM,
// each block 16-byte aligned (moe_fp8_segment_slack more floats than rows * groups in all).
struct MoeFp8QuantArgs {
  const void* src = nullptr;
  bool src_f32 = false;
  int64_t src_stride = 0;
  bool swiglu = false;
  int64_t up_offset = 0;
  const int32_t* order = nullptr;
  int32_t top_k = 1;
  const int32_t* count = nullptr;
  const int32_t* segments = nullptr;
  int32_t num_segments = 0;
  bool group = false;
  Fp8X out;  // rows: the row capacity (grid), cols, stride, scales
};
void moe_fp8_quantize(const MoeFp8QuantArgs& a, const Launch& launch);
constexpr int64_t moe_fp8_segment_scales(int64_t offset, int64_t segment, int64_t groups) {
  return (offset * groups + 3) / 4 * 4 + 4 * segment;
}
constexpr int64_t moe_fp8_segment_slack(int32_t segments) { return 4 * int64_t{segments} + 4; }
// Bytes and layout of an Fp8X of rows x cols quantized per row or per 128-group.
int64_t moe_fp8_x_bytes(int64_t rows, int64_t cols, bool group);
Fp8X moe_fp8_x_at(void* base, int64_t rows, int64_t cols, bool group);

}  // namespace inferdesk::cuda
