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

RopeConfig make_rope_config(int64_t head_dim, double rope_theta, const RopeScaling& scaling) {
  RopeConfig rope;
  rope.rotary_dim = static_cast<int32_t>(head_dim);
  rope.inv_freq.resize(static_cast<size_t>(head_dim / 2));
  const float base = static_cast<float>(rope_theta);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    rope.inv_freq[static_cast<size_t>(i)] = 1.0f / std::pow(base, exponent);
  }
  if (scaling.type == "llama3") {
    for (float& f : rope.inv_freq) f = llama3_scale(f, scaling);
  } else if (scaling.type == "linear") {
    for (float& f : rope.inv_freq) f /= static_cast<float>(scaling.factor);
  } else if (!scaling.type.empty() && scaling.type != "default") {
    throw Error(ErrorCode::Unsupported, "rope_scaling type '" + scaling.type + "' is not supported");
  }
  return rope;
}

}  // namespace inferdesk
