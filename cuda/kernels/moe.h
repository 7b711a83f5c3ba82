// Mixture-of-experts ops (moe.cu, moe_grouped.cu): routing, the small-batch, grouped and large-batch
// expert paths, the weighted combine and the shared expert's sigmoid gate.
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// Expert ids are I32 [T, top_k] and routing weights F32 [T, top_k] (row strides in elements). The
// (token, slot) pair p = t * top_k + j is the unit of expert work. An expert id outside
// [0, num_experts) (never produced by moe_route) contributes nothing and is not counted.

// Per token: softmax over router logits [T, E] F32 (a NaN logit gets probability 0), the top_k
// largest probabilities (equal probabilities: lower expert id first), weights renormalised to sum
// 1 when `normalize`. Same maths as CpuBackend::moe_route; one thread block per token. E <= 8192.
void moe_route(const float* logits, int64_t logits_stride, int32_t tokens, int32_t num_experts, int32_t top_k,
               bool normalize, int32_t* ids, int64_t ids_stride, float* weights, int64_t weights_stride,
               const Launch& launch);

// The experts of one layer as device arrays of num_experts device pointers (built by the backend
// once per layer): gate[e] and up[e] BF16 [inter, hidden] contiguous, down[e] BF16 [hidden, inter].
struct MoeExpertTable {
  const bf16* const* gate = nullptr;
  const bf16* const* up = nullptr;
  const bf16* const* down = nullptr;
  int32_t num_experts = 0;
  int64_t hidden = 0, inter = 0;
};

// The small-batch expert path (decode, T <= kMoeSmallMaxTokens): per pair a vectorised GEMV over
// its expert's gate and up with the SwiGLU epilogue into act (BF16, rounded like the dense path's
// activations), then the down GEMV into slot_out (F32), then moe_combine into out. Each pair reads
// its expert's three matrices once with 16-byte loads. Needs hidden % 8 == 0, inter % 8 == 0, every
// weight pointer and x 16-byte aligned with x.stride % 8 == 0 (moe_small_supported checks the sizes,
// the backend the pointers). No allocation or synchronisation: capturable.
constexpr int32_t kMoeSmallMaxTokens = 8;
bool moe_small_supported(int64_t hidden, int64_t inter);
// What every expert path takes: the step's token rows, their routing (ids I32 and weights F32
// [T, top_k], row strides in elements), the layer's experts, the output and the counters (see
// MoeCombineArgs).
struct MoeStepArgs {
  Mat x;  // BF16 [T, hidden]
  const int32_t* ids = nullptr;
  int64_t ids_stride = 0;
  const float* weights = nullptr;
  int64_t weights_stride = 0;
  int32_t top_k = 0;
  MoeExpertTable experts;
  Mat out;  // F32 or BF16 [T, hidden]
  unsigned long long* counters = nullptr;
  const int32_t* row_slots = nullptr;
};
// Rows [t0, t0 + n) of a step (x, routing, out and row_slots advanced together).
MoeStepArgs moe_step_rows(const MoeStepArgs& a, int64_t t0, int64_t n);
struct MoeSmallArgs : MoeStepArgs {
  bf16* act = nullptr;        // scratch [T * top_k, inter], contiguous
  float* slot_out = nullptr;  // scratch [T * top_k, hidden], contiguous
};
void moe_experts_small(const MoeSmallArgs& a, const Launch& launch);

// The grouped expert path (medium batches, moe_grouped.cu): the T * top_k pairs stably sorted by
// expert on the device (moe_sort_pairs, into counts/offsets/order/position), then a gate/up kernel
// with the SwiGLU epilogue into act (BF16 [pairs, inter] in sorted order, rounded like the other
// paths) and a down kernel into y (F32 [pairs, hidden], sorted order), both over a fixed grid of
// (16-row tile, expert) blocks: a block reads its expert's [offsets[e], offsets[e + 1]) from device
// memory, exits when that is empty, and multiplies the expert's rows in passes of 32 tokens (four
// tensor-core groups of 8) so an expert's weights are streamed once per 32 of its pairs; then
// moe_combine (slot order) through `position` into out. Same size and alignment requirements as the
// small path (moe_small_supported; x, act, y 16-byte aligned, x.stride % 8 == 0), and T * top_k <=
// max_pairs, the capacity of order, position, act and y. No host synchronisation, no allocation,
// a grid that depends only on the shapes: capturable, and a captured graph serves any routing.
struct MoeGroupedArgs : MoeStepArgs {
  int32_t* counts = nullptr;    // scratch [num_experts]
  int32_t* offsets = nullptr;   // scratch [num_experts + 1]
  int32_t* order = nullptr;     // scratch [max_pairs]
  int32_t* position = nullptr;  // scratch [max_pairs]
  bf16* act = nullptr;          // scratch [max_pairs, inter], contiguous
  float* y = nullptr;           // scratch [max_pairs, hidden], contiguous
  int64_t max_pairs = 0;
};
void moe_experts_grouped(const MoeGroupedArgs& a, const Launch& launch);

// Large batches (the backend runs the expert GEMMs itself between these):
// Stable sort of the T * top_k pairs by expert: counts[e], offsets[e] (exclusive prefix sum,
// offsets[E] = pairs with a valid id), order[i] = the pair at sorted position i (pairs of one
// expert in increasing pair order), position[p] = the sorted position of pair p (untouched for an
// invalid id). Integer work only: the result does not depend on scheduling.
void moe_sort_pairs(const int32_t* ids, int64_t ids_stride, int32_t tokens, int32_t top_k, int32_t num_experts,
                    int32_t* counts, int32_t* offsets, int32_t* order, int32_t* position, const Launch& launch);
// xs[i] = x[order[i] / top_k] for i < pairs (x, xs BF16).
void moe_gather_pairs(const Mat& x, const int32_t* order, int32_t pairs, int32_t top_k, Mat xs, const Launch& launch);

// out[t] = sum over j = 0, 1, ..., top_k - 1 (in that order, F32) of weights[t, j] *
// y[row(t * top_k + j)], where row(p) = position ? position[p] : p; out F32 or BF16. When counters
// is not null, one is added (integer atomics) to counters[ids[t, j]] for every valid pair of a
// token whose row_slots entry is >= 0 (row_slots null: every token), so padding rows of a graph
// bucket are not counted.
struct MoeCombineArgs {
  const float* y = nullptr;  // [*, hidden] contiguous
  const int32_t* position = nullptr;
  const int32_t* ids = nullptr;
  int64_t ids_stride = 0;
  const float* weights = nullptr;
  int64_t weights_stride = 0;
  int32_t tokens = 0, top_k = 0, num_experts = 0;
  Mat out;
  unsigned long long* counters = nullptr;  // this layer's [num_experts], or null
  const int32_t* row_slots = nullptr;
};
void moe_combine(const MoeCombineArgs& a, const Launch& launch);
// The combine of a step's expert outputs y: pair p's row of y is position[p] (null: p).
MoeCombineArgs moe_combine_args(const MoeStepArgs& a, const float* y, const int32_t* position);

// out[t, :] += sigmoid(gate[t, 0]) * x[t, :] (Qwen2-MoE shared expert). out, x F32 or BF16 of the
// same shape; gate F32 or BF16 [T, >= 1].
void sigmoid_gate_add(Mat out, const Mat& x, const Mat& gate, const Launch& launch);

}  // namespace inferdesk::cuda
