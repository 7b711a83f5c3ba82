#include "core/layers/rope.h"

#include <cmath>

#include "core/util/error.h"

namespace inferdesk {

namespace {

constexpr float kPi = 3.14159265358979323846f;

// transformers' _compute_llama3_parameters, element-wise.
float llama3_scale(float inv_freq, const RopeScaling& s) {
  const float factor = static_cast<float>(s.factor);
  const float low = static_cast<float>(s.low_freq_factor);
  const float high = static_cast<float>(s.high_freq_factor);
  const float old_len = static_cast<float>(s.original_max_position_embeddings);
  const float low_freq_wavelen = old_len / low;
  const float high_freq_wavelen = old_len / high;
  const float wavelen = 2.0f * kPi / inv_freq;
  float scaled = wavelen > low_freq_wavelen ? inv_freq / factor : inv_freq;
  const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
  if (medium) {
    const float smooth = (old_len / wavelen - low) / (high - low);
    scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
  }
  return scaled;
}

}  // namespace

RopeConfig make_rope_config(const ModelConfig& config) {
  RopeConfig rope;
  const int64_t dim = config.head_dim;
  rope.rotary_dim = static_cast<int32_t>(dim);
  rope.inv_freq.resize(static_cast<size_t>(dim / 2));
  const float base = static_cast<float>(config.rope_theta);
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    rope.inv_freq[static_cast<size_t>(i)] = 1.0f / std::pow(base, exponent);
  }
  const RopeScaling& s = config.rope_scaling;
  if (s.type == "llama3") {
    for (float& f : rope.inv_freq) f = llama3_scale(f, s);
  } else if (s.type == "linear") {
    for (float& f : rope.inv_freq) f /= static_cast<float>(s.factor);
  } else if (!s.type.empty() && s.type != "default") {
    throw Error(ErrorCode::Unsupported, "rope_scaling type '" + s.type + "' is not supported");
  }
  return rope;
}

}  // namespace inferdesk
