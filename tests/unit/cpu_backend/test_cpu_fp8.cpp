// FP8: the E4M3/E5M2 conversions against values the OCP FP8 spec defines, and the CPU backend's
// FP8 linear, experts and KV cache against a double-precision implementation of the definition in
// core/backend/quant.h.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/util/fp8.h"
#include "tests/unit/cpu_backend/cpu_test_util.h"

namespace inferdesk::test {
namespace {

TEST(Fp8Convert, E4M3ValuesFromTheSpec) {
  EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.0f);  // S.1111.110: the largest finite
  EXPECT_EQ(fp8_e4m3_to_f32(0xfe), -448.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0x7f)));          // S.1111.111 is NaN, no infinities
  EXPECT_EQ(fp8_e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_f32(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_e4m3_to_f32(0x38), 1.0f);  // exponent bias 7
  EXPECT_EQ(fp8_e4m3_to_f32(0x80), 0.0f);
  EXPECT_TRUE(std::signbit(fp8_e4m3_to_f32(0x80)));
}

TEST(Fp8Convert, E4M3RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(f32_to_fp8_e4m3(1.0625f), 0x38);  // halfway 1.0 | 1.125: to the even mantissa (1.0)
  EXPECT_EQ(f32_to_fp8_e4m3(1.1875f), 0x3a);  // halfway 1.125 | 1.25: to 1.25
  EXPECT_EQ(f32_to_fp8_e4m3(1.07f), 0x39);
  EXPECT_EQ(f32_to_fp8_e4m3(1000.0f), 0x7e);  // saturates (SATFINITE)
  EXPECT_EQ(f32_to_fp8_e4m3(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(f32_to_fp8_e4m3(std::nanf("")) & 0x7f, 0x7f);
  EXPECT_EQ(f32_to_fp8_e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal: ties to 0
  EXPECT_EQ(f32_to_fp8_e4m3(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(f32_to_fp8_e4m3(7.5f * std::ldexp(1.0f, -9)), 0x08);  // rounds up into the normals
  // Every finite code survives the round trip.
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;
    EXPECT_EQ(f32_to_fp8_e4m3(fp8_e4m3_to_f32(static_cast<uint8_t>(c))), c == 0x80 ? 0x80 : c) << c;
  }
}

TEST(Fp8Convert, E5M2ValuesFromTheSpec) {
  EXPECT_EQ(fp8_e5m2_to_f32(0x7b), 57344.0f);
  EXPECT_TRUE(std::isinf(fp8_e5m2_to_f32(0x7c)));
  EXPECT_EQ(fp8_e5m2_to_f32(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8_e5m2_to_f32(0x3c), 1.0f);
  EXPECT_EQ(f32_to_fp8_e5m2(1e6f), 0x7b);
  EXPECT_EQ(f32_to_fp8_e5m2(1.125f), 0x3c);  // halfway 1.0 | 1.25: to even
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7c) == 0x7c) continue;  // inf / NaN
    EXPECT_EQ(f32_to_fp8_e5m2(fp8_e5m2_to_f32(static_cast<uint8_t>(c))), c) << c;
  }
}

// An FP8 weight on the host: codes, scales, and its exact values as doubles.
struct Fp8Weight {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  HostTensor host;
  Buffer buf;
  QuantInfo q;
};

std::unique_ptr<Fp8Weight> make_fp8(Backend& be, std::mt19937_64& rng, int64_t N, int64_t K, QuantInfo q) {
  auto w = std::make_unique<Fp8Weight>();
  std::uniform_real_distribution<float> u(-448.0f, 448.0f), s(0.5f, 2.0f);
  w->codes.resize(static_cast<size_t>(N * K));
  for (auto& c : w->codes) c = f32_to_fp8_e4m3(u(rng));
  int64_t sr = 1, sc = 1;
  if (q.granularity == ScaleGranularity::Channel) sr = N;
  if (q.granularity == ScaleGranularity::Block) {
    sr = (N + q.block_n - 1) / q.block_n;
    sc = (K + q.block_k - 1) / q.block_k;
  }
  w->scales.resize(static_cast<size_t>(sr * sc));
  for (auto& v : w->scales) v = s(rng) / (448.0f * std::sqrt(static_cast<float>(K)));
  w->host = HostTensor{
      "fp8.weight", DType::F8E4M3, {N, K}, reinterpret_cast<const std::byte*>(w->codes.data()), w->codes.size()};
  Buffer scales = be.load_scales(w->scales.data(), sr, sc);
  q.scale_rows = sr;
  q.scale_cols = sc;
  w->buf = be.load_weight(w->host, N, K);
  w->buf.set_quant(q, scales);
  w->q = q;
  return w;
}

// The definition in double precision; the activation quantization is the float32 arithmetic the
// definition prescribes (its result is exact codes, so only the sums are in double).
std::vector<double> reference(const std::vector<double>& x, int64_t T, int64_t K, const Fp8Weight& w,
                              const std::vector<double>* bias) {
  const QuantInfo& q = w.q;
  const int64_t N = w.host.shape[0];
  const int64_t group = q.granularity == ScaleGranularity::Block ? q.block_k : K;
  std::vector<double> out(static_cast<size_t>(T * N), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t g0 = 0; g0 < K; g0 += group) {
      const int64_t g1 = std::min(K, g0 + group);
      float amax = 0.0f;
      for (int64_t k = g0; k < g1; ++k) amax = std::max(amax, std::fabs(static_cast<float>(x[t * K + k])));
      float sx = q.act == ActQuant::Static ? q.input_scale : std::max(amax / 448.0f, kFp8MinActScale);
      if (q.act == ActQuant::None) sx = 1.0f;
      const float inv = 1.0f / sx;
      for (int64_t n = 0; n < N; ++n) {
        double dot = 0.0;
        for (int64_t k = g0; k < g1; ++k) {
          const float xf = static_cast<float>(x[t * K + k]);
          const double xq = q.act == ActQuant::None ? xf : fp8_e4m3_to_f32(f32_to_fp8_e4m3(xf * inv));
          dot += xq * fp8_e4m3_to_f32(w.codes[n * K + k]);
        }
        double sw = w.scales[0];
        if (q.granularity == ScaleGranularity::Channel) sw = w.scales[n];
        if (q.granularity == ScaleGranularity::Block)
          sw = w.scales[(n / q.block_n) * ((K + q.block_k - 1) / q.block_k) + g0 / q.block_k];
        out[t * N + n] += dot * sx * sw;
      }
    }
    if (bias)
      for (int64_t n = 0; n < N; ++n) out[t * N + n] += (*bias)[n];
  }
  return out;
}

QuantInfo scheme(ScaleGranularity g, ActQuant a, int32_t block = 0) {
  QuantInfo q;
  q.scheme = QuantScheme::Fp8;
  q.granularity = g;
  q.act = a;
  q.block_n = q.block_k = block;
  q.input_scale = 0.02f;
  return q;
}

class CpuFp8Test : public CpuBackendTest {};

TEST_P(CpuFp8Test, LinearMatchesTheDefinition) {
  const QuantInfo schemes[] = {scheme(ScaleGranularity::Tensor, ActQuant::DynamicToken),
                               scheme(ScaleGranularity::Channel, ActQuant::DynamicToken),
                               scheme(ScaleGranularity::Channel, ActQuant::Static),
                               scheme(ScaleGranularity::Channel, ActQuant::None),
                               scheme(ScaleGranularity::Block, ActQuant::DynamicGroup, 128)};
  for (const QuantInfo& q : schemes) {
    for (int64_t T : {1, 3, 70}) {
      for (auto [K, N] : {std::pair<int64_t, int64_t>{256, 136}, {300, 200}, {64, 7}}) {
        auto w = make_fp8(*be, rng, N, K, q);
        const auto ref = [&](const std::vector<double>& x, const std::vector<double>* bias) {
          return reference(x, T, K, *w, bias);
        };
        // Static activations saturate beyond 448 * input_scale: values stay inside it (3.0).
        // Float32 sums of K terms against double ones.
        EXPECT_LT(linear_error(*be, rng, w->buf.tensor(), T, K, N, T != 3, 3.0, ref), 1e-5)
            << describe(q) << " T=" << T << " K=" << K << " N=" << N;
      }
    }
  }
}

TEST_P(CpuFp8Test, ExpertsRunFp8Weights) {
  const int64_t T = 5, H = 128, I = 96, E = 3;
  const QuantInfo q = scheme(ScaleGranularity::Channel, ActQuant::DynamicToken);
  std::vector<std::unique_ptr<Fp8Weight>> ws;
  const std::vector<ExpertWeights> experts = make_experts(E, H, I, ws, [&](int64_t rows, int64_t cols) {
    return make_fp8(*be, rng, rows, cols, q);
  });
  MoeInputs in = moe_inputs(*be, rng, T, H, E, {0.75f, 0.25f});
  const std::vector<double>& xv = in.xv;
  be->moe_experts(0, in.x.tensor(), experts, in.ids.tensor(), in.weights.tensor(), in.out.tensor());
  std::vector<double> want(static_cast<size_t>(T * H), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<double> xt(xv.begin() + t * H, xv.begin() + (t + 1) * H);
    for (int j = 0; j < 2; ++j) {
      const int e = static_cast<int>((t + j) % E);
      std::vector<double> g = reference(xt, 1, H, *ws[3 * e], nullptr),
                          u = reference(xt, 1, H, *ws[3 * e + 1], nullptr);
      std::vector<double> h(static_cast<size_t>(I));
      for (int64_t i = 0; i < I; ++i) h[i] = static_cast<float>(g[i] / (1.0 + std::exp(-g[i])) * u[i]);
      std::vector<double> d = reference(h, 1, I, *ws[3 * e + 2], nullptr);
      for (int64_t c = 0; c < H; ++c) want[t * H + c] += (j == 0 ? 0.75 : 0.25) * d[c];
    }
  }
  // The intermediate is rounded to float before its own FP8 quantization, as the backend does; an
  // activation code can still differ at a rounding tie, hence a looser bound than one linear.
  EXPECT_LT(nerr(get_f32(*be, in.out.tensor()), want), 1e-3);
}

// An FP8 KV cache reads back each K/V value as E4M3(value / scale) * scale: attention over it
// equals attention over an ordinary cache holding those rounded values.
TEST_P(CpuFp8Test, KvCacheRoundsThroughE4M3) {
  const int32_t H = 2, D = 64, T = 20;
  auto run = [&](KvCacheDtype dt, bool pre_round) {
    auto b = make_cpu_backend(1);
    KvCacheShape s{1, 4, 16, H, D, dt, {0.05f}, {0.02f}};
    if (dt == KvCacheDtype::Auto) s.k_scales = s.v_scales = {};
    b->init_kv_cache(s);
    StepInput step;
    for (int32_t i = 0; i < T; ++i) {
      step.token_ids.push_back(0);
      step.positions.push_back(i);
      step.slot_mapping.push_back(i);
    }
    step.seqs.push_back({0, T, T, 0, 2});
    step.block_tables = {0, 1};
    b->begin_step(step);
    Buffer q = b->alloc(DType::F32, T, H * D), k = b->alloc(DType::F32, T, H * D), v = b->alloc(DType::F32, T, H * D);
    std::mt19937_64 r(7);
    std::vector<double> kv = random_values(r, T * H * D, 2.0), vv = random_values(r, T * H * D, 2.0);
    if (pre_round) {
      for (auto& x : kv) x = fp8_e4m3_to_f32(f32_to_fp8_e4m3(static_cast<float>(x) * (1.0f / 0.05f))) * 0.05f;
      for (auto& x : vv) x = fp8_e4m3_to_f32(f32_to_fp8_e4m3(static_cast<float>(x) * (1.0f / 0.02f))) * 0.02f;
    }
    set_f32(q.tensor(), random_values(r, T * H * D));
    set_f32(k.tensor(), kv);
    set_f32(v.tensor(), vv);
    b->write_kv(0, k.tensor(), v.tensor());
    Buffer out = b->alloc(DType::F32, T, H * D);
    b->attention(0, q.tensor(), AttentionParams{H, H, D, 0.125f, 0}, out.tensor());
    return get_f32(*b, out.tensor());
  };
  const std::vector<double> fp8 = run(KvCacheDtype::Fp8, false), rounded = run(KvCacheDtype::Auto, true),
                            exact = run(KvCacheDtype::Auto, false);
  EXPECT_EQ(fp8, rounded);
  EXPECT_GT(nerr(fp8, exact), 1e-3);  // the rounding is really there
  EXPECT_LT(nerr(fp8, exact), 0.1);
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuFp8Test, testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace inferdesk::test

namespace inferdesk::test {
namespace {

// PyTorch's casts (tools/golden/make_fp8_conversions.py): every code's value, and the code of
// exact ties between neighbours, subnormals and random values in range.
TEST(Fp8Convert, MatchesPyTorch) {
  std::ifstream in(std::filesystem::path(INFERDESK_TEST_SOURCE_DIR) / "tests/golden/fp8/conversions.json");
  ASSERT_TRUE(in) << "missing tests/golden/fp8/conversions.json";
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const char* kind : {"e4m3", "e5m2"}) {
    const bool e4 = kind[1] == '4';
    const auto& values = j[std::string(kind) + "_values"];
    for (int c = 0; c < 256; ++c) {
      const float got = e4 ? fp8_e4m3_to_f32(static_cast<uint8_t>(c)) : fp8_e5m2_to_f32(static_cast<uint8_t>(c));
      if (values[c].is_null()) {
        EXPECT_FALSE(std::isfinite(got)) << kind << " code " << c;
      } else {
        EXPECT_EQ(got, values[c].get<float>()) << kind << " code " << c;
      }
    }
    const auto& xs = j[std::string(kind) + "_inputs"];
    const auto& codes = j[std::string(kind) + "_codes"];
    int wrong = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const float x = xs[i].get<float>();
      const int want = codes[i].get<int>(), got = e4 ? f32_to_fp8_e4m3(x) : f32_to_fp8_e5m2(x);
      if (got != want && ++wrong <= 10) ADD_FAILURE() << kind << ": " << x << " -> " << got << ", torch " << want;
    }
    EXPECT_EQ(wrong, 0) << kind << " of " << xs.size();
  }
}

}  // namespace
}  // namespace inferdesk::test
