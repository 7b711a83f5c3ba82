// Integer weights (QuantScheme::Int): the CPU backend's linear and experts against a double-precision
// implementation of the definition in core/backend/quant.h, for 4- and 8-bit codes, symmetric and
// with zero points, per channel, per group and with a g_idx, weight-only and W8A8.
#include <algorithm>
#include <cmath>

#include "tests/unit/cpu_backend/cpu_test_util.h"

namespace inferdesk::test {
namespace {

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

QuantInfo int_scheme(int32_t bits, int32_t group, bool zero, bool act_order, ActQuant act = ActQuant::None) {
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

std::unique_ptr<IntWeight> make_int(Backend& be, std::mt19937_64& rng, int64_t N, int64_t K, QuantInfo q) {
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
std::vector<double> reference(const std::vector<double>& x, int64_t T, const IntWeight& w,
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

class CpuIntTest : public CpuBackendTest {};

TEST_P(CpuIntTest, LinearMatchesTheDefinition) {
  const QuantInfo schemes[] = {int_scheme(4, 128, true, false), int_scheme(4, 32, false, false),
                               int_scheme(4, 64, true, true),   int_scheme(4, 0, false, false),
                               int_scheme(8, 64, true, false),  int_scheme(8, 32, false, true),
                               int_scheme(8, 0, true, false),   int_scheme(8, 0, false, false, ActQuant::DynamicToken)};
  for (const QuantInfo& q : schemes) {
    for (int64_t T : {1, 3, 40}) {
      for (auto [K, N] : {std::pair<int64_t, int64_t>{256, 72}, {128, 33}}) {
        auto w = make_int(*be, rng, N, K, q);
        const auto ref = [&](const std::vector<double>& x, const std::vector<double>* bias) {
          return reference(x, T, *w, bias);
        };
        EXPECT_LT(linear_error(*be, rng, w->buf.tensor(), T, K, N, T != 3, 2.0, ref), 1e-5)
            << describe(q) << " T=" << T << " K=" << K << " N=" << N;
      }
    }
  }
}

TEST_P(CpuIntTest, AWrongCodeOrderWouldBeCaught) {
  // Swapping the two nibbles of one byte changes the result: the test above can fail.
  auto w = make_int(*be, rng, 8, 64, int_scheme(4, 32, false, false));
  Buffer xb = be->alloc(DType::F32, 1, 64), ob = be->alloc(DType::F32, 1, 8);
  std::vector<double> xv = set_f32(xb.tensor(), random_values(rng, 64, 2.0));
  const std::vector<double> want = reference(xv, 1, *w, nullptr);
  w->codes[0] = static_cast<uint8_t>((w->codes[0] >> 4) | (w->codes[0] << 4));
  if (w->q[0] == w->q[1]) w->codes[0] ^= 0x01;
  be->linear(xb.tensor(), w->buf.tensor(), nullptr, ob.tensor());
  EXPECT_GT(nerr(get_f32(*be, ob.tensor()), want), 1e-5);
}

TEST_P(CpuIntTest, ExpertsRunIntWeights) {
  const int64_t T = 4, H = 128, I = 64, E = 2;
  const QuantInfo q = int_scheme(4, 32, true, false);
  std::vector<std::unique_ptr<IntWeight>> ws;
  const std::vector<ExpertWeights> experts = make_experts(E, H, I, ws, [&](int64_t rows, int64_t cols) {
    return make_int(*be, rng, rows, cols, q);
  });
  MoeInputs in = moe_inputs(*be, rng, T, H, E, {1.0f});
  const std::vector<double>& xv = in.xv;
  be->moe_experts(0, in.x.tensor(), experts, in.ids.tensor(), in.weights.tensor(), in.out.tensor());
  std::vector<double> want;
  for (int64_t t = 0; t < T; ++t) {
    const int e = static_cast<int>(t % E);
    const std::vector<double> xt(xv.begin() + t * H, xv.begin() + (t + 1) * H);
    std::vector<double> g = reference(xt, 1, *ws[3 * e], nullptr), u = reference(xt, 1, *ws[3 * e + 1], nullptr);
    std::vector<double> h(static_cast<size_t>(I));
    for (int64_t i = 0; i < I; ++i) h[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    const std::vector<double> d = reference(h, 1, *ws[3 * e + 2], nullptr);
    want.insert(want.end(), d.begin(), d.end());
  }
  EXPECT_LT(nerr(get_f32(*be, in.out.tensor()), want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuIntTest, testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace inferdesk::test
