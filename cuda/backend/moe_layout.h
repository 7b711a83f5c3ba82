// Scratch layouts of the MoE runner's paths (moe_runner.cpp, moe_runner_fp8.cpp): byte offsets of
// each array, 256-byte aligned, for a number of (token, slot) pairs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/moe_fp8.h"

namespace inferdesk::cuda {

inline size_t align256(size_t b) { return (b + 255) / 256 * 256; }

struct ScratchCursor {
  size_t at = 0;
  size_t take(size_t bytes) {
    const size_t o = at;
    at += align256(bytes);
    return o;
  }
};

// The pair sort's arrays (moe_sort_pairs), first in the grouped and large paths' scratch.
struct SortLayout {
  size_t counts = 0, offsets = 0, order = 0, position = 0;
};
inline SortLayout take_sort(ScratchCursor& c, size_t pairs, int32_t experts) {
  SortLayout l;
  l.counts = c.take(static_cast<size_t>(experts) * 4);
  l.offsets = c.take((static_cast<size_t>(experts) + 1) * 4);
  l.order = c.take(pairs * 4);
  l.position = c.take(pairs * 4);
  return l;
}

// FP8 experts, grouped and large paths alike: the quantized token rows (xq), gate | up or act in
// F32, the quantized act (aq) and the expert outputs in F32 (y). The grouped path keeps act [P, I]
// where the large one keeps the two GEMMs' gate | up [P, 2 I] (the SwiGLU is fused into the
// quantization of aq there).
struct Fp8MoeLayout : SortLayout {
  size_t xq = 0, f32 = 0, aq = 0, y = 0, total = 0;
};
inline Fp8MoeLayout fp8_moe_layout(int64_t pairs, int32_t experts, int64_t hidden, int64_t inter, bool block,
                                   bool large) {
  const auto P = static_cast<size_t>(pairs), H = static_cast<size_t>(hidden), I = static_cast<size_t>(inter);
  ScratchCursor c;
  Fp8MoeLayout l;
  static_cast<SortLayout&>(l) = take_sort(c, P, experts);
  const auto slack = static_cast<size_t>(moe_fp8_segment_slack(experts)) * 4;  // segment alignment
  l.xq = c.take(static_cast<size_t>(moe_fp8_x_bytes(pairs, hidden, block)) + slack);
  l.f32 = c.take(P * (large ? 2 : 1) * I * 4);
  l.aq = c.take(static_cast<size_t>(moe_fp8_x_bytes(pairs, inter, block)) + slack);
  l.y = c.take(P * H * 4);
  l.total = c.at;
  return l;
}
inline Fp8MoeLayout fp8_grouped_layout(int64_t pairs, int32_t experts, int64_t hidden, int64_t inter, bool block) {
  return fp8_moe_layout(pairs, experts, hidden, inter, block, false);
}

// Tokens per chunk of the FP8 large path: as many as fit in `cap` bytes (at least one).
inline int64_t fp8_large_chunk_tokens(size_t cap, int32_t top_k, int32_t experts, int64_t hidden, int64_t inter,
                                      bool block) {
  const size_t fixed = fp8_moe_layout(0, experts, hidden, inter, block, true).total + 8 * 256;
  const size_t per_pair = fp8_moe_layout(1024, experts, hidden, inter, block, true).total / 1024 + 16;
  const size_t room = cap > fixed ? cap - fixed : 0;
  return std::max<int64_t>(1, static_cast<int64_t>(room / per_pair) / top_k);
}

}  // namespace inferdesk::cuda
