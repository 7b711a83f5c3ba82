// The canonical integer layout's accessors, the round-to-nearest quantizers and the upload
// (int_weights.h). The on-disk readers are in int_formats.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/io/int_weights.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

[[noreturn]] void bad(const std::string& name, const std::string& reason) {
  throw Error(ErrorCode::Format, "tensor '" + name + "': " + reason);
}

// Symmetric round-to-nearest of w [n, k] in groups of `group` columns to codes in [qmin, qmax]
// with s = amax / qdiv; an all-zero group keeps scale 1.
HostIntWeight quantize_rtn(const HostTensor& w, int64_t n, int64_t k, int32_t bits, int64_t group, float qdiv) {
  if (w.dtype != DType::F32 && w.dtype != DType::BF16 && w.dtype != DType::F16)
    bad(w.name, std::string("only F32, F16 and BF16 weights can be quantized, not ") + dtype_name(w.dtype));
  if (n <= 0 || k <= 0 || w.numel() != n * k)
    bad(w.name, "shape does not match [" + std::to_string(n) + ", " + std::to_string(k) + "]");
  HostIntWeight h;
  h.rows = n;
  h.scheme.scheme = QuantScheme::Int;
  h.scheme.bits = bits;
  h.scheme.in_features = k;
  h.scheme.granularity = group >= k ? ScaleGranularity::Channel : ScaleGranularity::Group;
  h.scheme.group_size = group >= k ? 0 : static_cast<int32_t>(group);
  const int64_t g_cols = group >= k ? 1 : (k + group - 1) / group, width = std::min(group, k);
  h.codes.assign(static_cast<size_t>(n * h.code_cols()), 0);
  h.scales = HostScales{std::vector<float>(static_cast<size_t>(n * g_cols)), n, g_cols};
  const int32_t qmax = (1 << (bits - 1)) - 1, qmin = -(1 << (bits - 1));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t g = 0; g < g_cols; ++g) {
      const int64_t k0 = g * width, k1 = std::min(k, k0 + width);
      float amax = 0.0f;
      for (int64_t c = k0; c < k1; ++c) {
        const float v = float_at(w, r * k + c);
        if (!std::isfinite(v)) bad(w.name, "holds a non-finite value in row " + std::to_string(r));
        amax = std::max(amax, std::fabs(v));
      }
      float s = amax / qdiv;
      if (!(s > 0.0f)) s = 1.0f;
      h.scales.values[static_cast<size_t>(r * g_cols + g)] = s;
      for (int64_t c = k0; c < k1; ++c) {
        const float q = std::nearbyint(float_at(w, r * k + c) / s);
        h.set_code(r, c, static_cast<int32_t>(std::clamp(q, static_cast<float>(qmin), static_cast<float>(qmax))));
      }
    }
  }
  return h;
}

}  // namespace

int64_t HostIntWeight::code_cols() const {
  return scheme.bits == 4 ? (scheme.in_features + 1) / 2 : scheme.in_features;
}

void HostIntWeight::set_code(int64_t n, int64_t k, int32_t v) {
  if (scheme.bits == 8) {
    codes[static_cast<size_t>(n * scheme.in_features + k)] = static_cast<uint8_t>(static_cast<int8_t>(v));
    return;
  }
  uint8_t& b = codes[static_cast<size_t>(n * code_cols() + k / 2)];
  const auto nib = static_cast<uint8_t>(static_cast<uint8_t>(v) & 0x0f);
  b = (k % 2 == 0) ? static_cast<uint8_t>((b & 0xf0) | nib) : static_cast<uint8_t>((b & 0x0f) | (nib << 4));
}

int32_t HostIntWeight::code(int64_t n, int64_t k) const {
  if (scheme.bits == 8) return static_cast<int8_t>(codes[static_cast<size_t>(n * scheme.in_features + k)]);
  const uint8_t b = codes[static_cast<size_t>(n * code_cols() + k / 2)];
  const int32_t nib = (k % 2 == 0) ? (b & 0x0f) : (b >> 4);
  return nib >= 8 ? nib - 16 : nib;
}

int64_t HostIntWeight::group_of(int64_t k) const {
  if (scheme.act_order) return g_idx[static_cast<size_t>(k)];
  return scheme.granularity == ScaleGranularity::Group ? k / scheme.group_size : 0;
}

float HostIntWeight::dequantized(int64_t n, int64_t k) const {
  const size_t i = static_cast<size_t>(n * scales.cols + group_of(k));
  const float z = scheme.has_zero_point ? zeros[i] : 0.0f;
  return (static_cast<float>(code(n, k)) - z) * scales.values[i];
}

HostIntWeight quantize_int8_per_channel(const HostTensor& w, int64_t n, int64_t k) {
  return quantize_rtn(w, n, k, 8, k, 127.0f);
}

HostIntWeight quantize_int4_group(const HostTensor& w, int64_t n, int64_t k, int64_t group) {
  if (group <= 0 || group % 2 != 0)
    throw Error(ErrorCode::InvalidArgument, "int4 group size must be positive and even, got " + std::to_string(group));
  return quantize_rtn(w, n, k, 4, group, 7.0f);
}

Buffer upload_int_weight(Backend& backend, const HostTensor& host_codes, const HostIntWeight& h,
                         const std::string& what) {
  QuantInfo q = h.scheme;
  q.scale_rows = h.scales.rows;
  q.scale_cols = h.scales.cols;
  if (!backend.supports_quant(q))
    throw Error(ErrorCode::Unsupported, what + ": the " + backend.name() + " backend does not run " + describe(q));
  Buffer codes = backend.load_weight(host_codes, h.rows, h.code_cols());
  const Buffer scales = backend.load_scales(h.scales.values.data(), h.scales.rows, h.scales.cols);
  const Buffer zeros = q.has_zero_point ? backend.load_scales(h.zeros.data(), h.scales.rows, h.scales.cols) : Buffer{};
  const Buffer g_idx = q.act_order ? backend.load_indices(h.g_idx.data(), static_cast<int64_t>(h.g_idx.size()))
                                   : Buffer{};
  codes.set_quant(q, scales, zeros, g_idx);
  return codes;
}

}  // namespace inferdesk
