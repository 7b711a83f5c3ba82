// Integer weights in the canonical layout (core/backend/quant.h) built on the host from random
// codes, and the definition evaluated in double precision: shared by test_cpu_int*.cpp.
#pragma once

#include <algorithm>
#include <cmath>

#include "tests/unit/cpu_backend/cpu_test_util.h"

namespace inferdesk::test {

// An integer weight in the canonical layout, built on the host from random codes.
struct IntWeight {
  std::vector<uint8_t> codes;
  std::vector<int32_t> q;  // [N, K] the signed values
  std::vector<float> scales, zeros;
  std::vector<int32_t> g_idx;
  HostTensor host;
  Buffer buf;
  QuantInfo info;
  int64_t N = 0, K = 0;

  int64_t group(int64_t k) const {
    if (info.act_order) return g_idx[k];
    return info.granularity == ScaleGranularity::Group ? k / info.group_size : 0;
  }
  double value(int64_t n, int64_t k) const {
    const size_t i = static_cast<size_t>(n * info.scale_cols + group(k));
    return (q[n * K + k] - (info.has_zero_point ? static_cast<double>(zeros[i]) : 0.0)) * scales[i];
  }
};

inline QuantInfo int_scheme(int32_t bits, int32_t group, bool zero, bool act_order, ActQuant act = ActQuant::None) {
  QuantInfo q;
  q.scheme = QuantScheme::Int;
  q.bits = bits;
  q.granularity = group > 0 ? ScaleGranularity::Group : ScaleGranularity::Channel;
  q.group_size = group;
  q.has_zero_point = zero;
  q.act_order = act_order;
  q.act = act;
  return q;
}

inline std::unique_ptr<IntWeight> make_int(Backend& be, std::mt19937_64& rng, int64_t N, int64_t K, QuantInfo q) {
  auto w = std::make_unique<IntWeight>();
  w->N = N;
  w->K = K;
  const int32_t lo = -(1 << (q.bits - 1)), hi = (1 << (q.bits - 1)) - 1;
  std::uniform_int_distribution<int32_t> code(lo, hi);
  std::uniform_real_distribution<float> s(0.5f, 2.0f);
  const int64_t G = q.granularity == ScaleGranularity::Group ? (K + q.group_size - 1) / q.group_size : 1;
  const int64_t bytes = q.bits == 4 ? (K + 1) / 2 : K;
  w->codes.assign(static_cast<size_t>(N * bytes), 0);
  w->q.resize(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int32_t v = code(rng);
      w->q[n * K + k] = v;
      if (q.bits == 8) {
        w->codes[n * K + k] = static_cast<uint8_t>(static_cast<int8_t>(v));
      } else {
        w->codes[n * bytes + k / 2] |= static_cast<uint8_t>((static_cast<uint8_t>(v) & 0xf) << (k % 2 ? 4 : 0));
      }
    }
  w->scales.resize(static_cast<size_t>(N * G));
  for (auto& v : w->scales) v = s(rng) / (static_cast<float>(hi) * std::sqrt(static_cast<float>(K)));
  if (q.has_zero_point) {
    w->zeros.resize(w->scales.size());
    for (auto& z : w->zeros) z = static_cast<float>(code(rng));
  }
  if (q.act_order) {
    w->g_idx.resize(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) w->g_idx[k] = static_cast<int32_t>(k / q.group_size);
    std::shuffle(w->g_idx.begin(), w->g_idx.end(), rng);
  }
  q.in_features = K;
  q.scale_rows = N;
  q.scale_cols = G;
  w->host = HostTensor{"int.weight",
                       q.bits == 4 ? DType::U8 : DType::I8,
                       {N, bytes},
                       reinterpret_cast<const std::byte*>(w->codes.data()),
                       w->codes.size()};
  w->buf = be.load_weight(w->host, N, bytes);
  const Buffer scales = be.load_scales(w->scales.data(), N, G);
  const Buffer zeros = q.has_zero_point ? be.load_scales(w->zeros.data(), N, G) : Buffer{};
  const Buffer g_idx = q.act_order ? be.load_indices(w->g_idx.data(), K) : Buffer{};
  w->buf.set_quant(q, scales, zeros, g_idx);
  w->info = q;
  return w;
}

// The definition in double precision. W8A8 quantizes x rows by the float32 arithmetic the
// definition prescribes (exact int8 codes); only the sums are in double.
inline std::vector<double> reference(const std::vector<double>& x, int64_t T, const IntWeight& w,
                              const std::vector<double>* bias) {
  const int64_t K = w.K, N = w.N;
  std::vector<double> out(static_cast<size_t>(T * N), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> xq(static_cast<size_t>(K));
    double sx = 1.0;
    if (w.info.act == ActQuant::DynamicToken) {
      float amax = 0.0f;
      for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(static_cast<float>(x[t * K + k])));
      const float s = std::max(amax / 127.0f, kInt8MinActScale);
      sx = s;
      for (int64_t k = 0; k < K; ++k)
        xq[k] = std::clamp(std::nearbyint(static_cast<float>(x[t * K + k]) / s), -128.0f, 127.0f);
    } else {
      for (int64_t k = 0; k < K; ++k) xq[k] = static_cast<float>(x[t * K + k]);
    }
    for (int64_t n = 0; n < N; ++n) {
      double dot = 0.0;
      if (w.info.act == ActQuant::DynamicToken) {
        for (int64_t k = 0; k < K; ++k) dot += xq[k] * w.q[n * K + k];
        dot *= sx * w.scales[n];
      } else {
        for (int64_t k = 0; k < K; ++k) dot += xq[k] * w.value(n, k);
      }
      out[t * N + n] = dot + (bias ? (*bias)[n] : 0.0);
    }
  }
  return out;
}

}  // namespace inferdesk::test
