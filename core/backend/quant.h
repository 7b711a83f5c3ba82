// A quantized linear weight as backends see it: the packed values (the weight Tensor itself, of a
// quantized dtype) plus a QuantInfo that says how to turn them back into numbers and how the
// activations are quantized on the way in. One representation for every scheme; each scheme is
// chosen per layer (a checkpoint's ignore list keeps e.g. lm_head in BF16).
//
// FP8 (E4M3 weights, the scheme of issue-27 checkpoints):
//   weight w[n, k] = fp8(q[n, k]) * s_w, with s_w one value (Tensor), one per output row (Channel)
//   or one per [block_n x block_k] tile (Block: scales [ceil(N/bn), ceil(K/bk)]).
//   Activations are quantized to E4M3 before the product, per token (DynamicToken: s_x = amax/448
//   of the row), per token and block_k-wide group (DynamicGroup, with Block weights), or with one
//   static scale (Static). Quantizing x: q = sat_e4m3(x * (1 / s_x)).
//   y[t, n] = sum over groups of s_x * s_w * sum_k fp8(qx[t, k]) * fp8(qw[n, k]), float32 math.
// The CPU backend (core/backend/cpu/cpu_quant_linear.cpp) is the reference for this definition.
#pragma once

#include <cstdint>
#include <string>

namespace inferdesk {

enum class QuantScheme : uint8_t {
  None,
  Fp8,  // E4M3 weights, E4M3 activations
};

enum class ScaleGranularity : uint8_t { Tensor, Channel, Block };

enum class ActQuant : uint8_t {
  None,          // weight-only: activations stay in the activation dtype
  DynamicToken,  // one scale per token row, computed on the fly
  DynamicGroup,  // one scale per token row and block_k columns (block-wise FP8)
  Static,        // one calibrated scale for every row (compressed-tensors input_scale)
};

// Smallest dynamic activation scale: an all-zero row still gets a finite, nonzero scale
// (the bound vLLM's dynamic FP8 quantization uses).
inline constexpr float kFp8MinActScale = 1.0f / (448.0f * 512.0f);

struct Tensor;

struct QuantInfo {
  QuantScheme scheme = QuantScheme::None;
  ScaleGranularity granularity = ScaleGranularity::Tensor;
  ActQuant act = ActQuant::None;
  int32_t block_n = 0;       // Block granularity: tile rows (output features)
  int32_t block_k = 0;       // tile columns (input features); also the DynamicGroup width
  float input_scale = 1.0f;  // Static activations
  // F32 scales in backend memory: [1, 1] (Tensor), [N, 1] (Channel), [ceil(N/bn), ceil(K/bk)] (Block).
  const void* scales = nullptr;
  int64_t scale_rows = 0;
  int64_t scale_cols = 0;
};

// "fp8 per-channel, dynamic per-token activations" and the like, for messages and `info`.
std::string describe(const QuantInfo& q);

}  // namespace inferdesk
