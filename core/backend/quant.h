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
//
// Int (4- and 8-bit integer weights: AWQ, GPTQ, compressed-tensors pack-/int-quantized, and the
// round-to-nearest quantizers). Every on-disk packing is converted at load (core/io/int_weights.h)
// into this one canonical layout, so a backend sees one format per bit width:
//   codes   8-bit: I8 [N, K], row n = output feature n, signed two's complement;
//           4-bit: U8 [N, ceil(K/2)], column k in byte k/2, even k in the low nibble, odd k in the
//           high one, each nibble a signed two's-complement value in [-8, 7]. The weight Tensor's
//           cols is the byte count; QuantInfo::in_features is K.
//   scales  F32 [N, G]: G = 1 (Channel) or the number of groups (Group; ceil(K / group_size)
//           without g_idx).
//   zeros   F32 [N, G], same layout, only when asymmetric (has_zero_point); signed like the codes.
//   g_idx   I32 [K], only for act-order (GPTQ desc_act) checkpoints: the group of input column k.
//           Without it the group of column k is k / group_size.
//   weight w[n, k] = (q[n, k] - z[n, g]) * s[n, g] with g the group of column k (z = 0 when
//           symmetric); float32 math.
//   Activations: ActQuant::None (weight-only: W4A16, W8A16): y = x @ w^T in float32.
//           ActQuant::DynamicToken (W8A8, 8-bit symmetric Channel weights only): each token row is
//           quantized to int8, s_x = max(amax / 127, kInt8MinActScale), qx = clamp(rne(x / s_x),
//           -128, 127), y[t, n] = s_x * s[n] * sum_k qx[t, k] * q[n, k] with an exact int32 sum.
// The CPU backend (core/backend/cpu/cpu_int_linear.cpp) is the reference for this definition.
#pragma once

#include <cstdint>
#include <string>

namespace inferdesk {

enum class QuantScheme : uint8_t {
  None,
  Fp8,  // E4M3 weights, E4M3 activations
  Int,  // 4- or 8-bit integer weights (bits), weight-only or with int8 activations
};

// Group: Int weights, one scale (and zero point) per output row and group of input columns.
enum class ScaleGranularity : uint8_t { Tensor, Channel, Block, Group };

enum class ActQuant : uint8_t {
  None,          // weight-only: activations stay in the activation dtype
  DynamicToken,  // one scale per token row, computed on the fly
  DynamicGroup,  // one scale per token row and block_k columns (block-wise FP8)
  Static,        // one calibrated scale for every row (compressed-tensors input_scale)
};

// Smallest dynamic activation scale: an all-zero row still gets a finite, nonzero scale
// (the bound vLLM's dynamic FP8 quantization uses).
inline constexpr float kFp8MinActScale = 1.0f / (448.0f * 512.0f);
// The same bound for dynamic int8 activations (W8A8).
inline constexpr float kInt8MinActScale = 1.0f / (127.0f * 512.0f);

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
  // Int only (the canonical layout above).
  int32_t bits = 0;                // 4 or 8
  int32_t group_size = 0;          // Group: input columns per group (also with g_idx, as the checkpoint says)
  int64_t in_features = 0;         // K (the 4-bit codes tensor has ceil(K/2) byte columns)
  bool has_zero_point = false;     // asymmetric: zeros set
  bool act_order = false;          // g_idx set
  const void* zeros = nullptr;     // F32 [scale_rows, scale_cols]
  const int32_t* g_idx = nullptr;  // I32 [in_features]
};

// "fp8 per-channel, dynamic per-token activations" and the like, for messages and `info`.
std::string describe(const QuantInfo& q);

}  // namespace inferdesk
