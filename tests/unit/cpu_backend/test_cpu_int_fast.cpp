// The AVX2 / AVX-512 integer kernels (core/backend/cpu/int_kernels.h) on odd shapes: K not a
// multiple of the vector width, partial last groups, 1..9 and 17 activation rows, act-order and
// group sizes the fast path does not take. Each result is checked against the definition in double
// precision and against the scalar backend (the reference, cpu_int_linear.cpp); W8A8 sums are
// exact, so there the fast path must equal the reference bit for bit.
#include <cstring>

#include "core/backend/cpu/int_kernels.h"
#include "tests/unit/cpu_backend/int_test_util.h"

namespace inferdesk::test {
namespace {

std::vector<BackendCase> fast_cases() {
  return {{CpuIsa::Avx2, 1}, {CpuIsa::Avx2, 2}, {CpuIsa::Avx512, 1}, {CpuIsa::Avx512, 2}};
}

class CpuIntFastTest : public CpuBackendTest {
 protected:
  std::unique_ptr<Backend> ref = make_cpu_backend(CpuBackendOptions{1, CpuIsa::Scalar});
};

struct Outcome {
  double vs_double = 0, vs_reference = 0;
  bool bitwise = false;
};

Outcome run_both(Backend& fast, Backend& ref, uint64_t seed, int64_t T, int64_t K, int64_t N, const QuantInfo& q) {
  std::mt19937_64 r1(seed), r2(seed), rx(seed + 1);
  auto wf = make_int(fast, r1, N, K, q);
  auto wr = make_int(ref, r2, N, K, q);
  auto b = make_weight(fast, DType::BF16, 1, N, random_values(rx, N, 0.1));
  const std::vector<double> xv = random_values(rx, T * K, 2.0);
  std::vector<double> outs[2];
  Backend* bes[2] = {&fast, &ref};
  const IntWeight* ws[2] = {wf.get(), wr.get()};
  for (int i = 0; i < 2; ++i) {
    Buffer xb = bes[i]->alloc(DType::F32, T, K), ob = bes[i]->alloc(DType::F32, T, N);
    set_f32(xb.tensor(), xv);
    poison(ob.tensor());
    Tensor bias = b->buf.tensor();
    bes[i]->linear(xb.tensor(), ws[i]->buf.tensor(), &bias, ob.tensor());
    outs[i] = get_f32(*bes[i], ob.tensor());
  }
  std::vector<double> xr(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) xr[i] = static_cast<float>(xv[i]);
  const std::vector<double> want = reference(xr, T, *wf, &b->values);
  return {nerr(outs[0], want), nerr(outs[0], outs[1]), outs[0] == outs[1]};
}

TEST_P(CpuIntFastTest, OddShapesMatchTheDefinitionAndTheReference) {
  const QuantInfo schemes[] = {
      int_scheme(4, 128, true, false), int_scheme(4, 32, false, false), int_scheme(4, 0, false, false),
      int_scheme(4, 0, true, false),   int_scheme(8, 64, true, false),  int_scheme(8, 0, false, false),
      int_scheme(4, 32, true, true),   int_scheme(8, 32, false, true),  int_scheme(4, 48, true, false)};
  uint64_t seed = 7;
  for (const QuantInfo& q : schemes)
    for (auto [K, N] : {std::pair<int64_t, int64_t>{333, 37}, {1000, 133}, {64, 5}, {13, 9}})
      for (int64_t T : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {
        if (q.granularity == ScaleGranularity::Group && q.group_size > K) continue;
        const Outcome o = run_both(*be, *ref, ++seed, T, K, N, q);
        EXPECT_LT(o.vs_double, 1e-5) << describe(q) << " T=" << T << " K=" << K << " N=" << N;
        EXPECT_LT(o.vs_reference, 1e-5) << describe(q) << " T=" << T << " K=" << K << " N=" << N;
      }
}

TEST_P(CpuIntFastTest, W8A8EqualsTheReferenceExactly) {
  const QuantInfo q = int_scheme(8, 0, false, false, ActQuant::DynamicToken);
  uint64_t seed = 99;
  for (auto [K, N] : {std::pair<int64_t, int64_t>{333, 37}, {1000, 133}, {31, 70}, {2048, 64}})
    for (int64_t T : {1, 2, 3, 5, 8, 9, 70}) {
      const Outcome o = run_both(*be, *ref, ++seed, T, K, N, q);
      EXPECT_TRUE(o.bitwise) << "T=" << T << " K=" << K << " N=" << N << " differs by " << o.vs_reference;
      EXPECT_LT(o.vs_double, 1e-5) << "T=" << T << " K=" << K << " N=" << N;
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuIntFastTest, testing::ValuesIn(fast_cases()), case_name);

// The int8 kernels called directly on the extremes: every weight -128 against activation codes of
// +-127 puts the most into each int16 pair (2 * 128 * 127); a saturating or sign-flipping product
// would be off by thousands.
std::vector<float> run_int8(void (*rows)(const cpu::Int8Args&, int64_t, int64_t), const std::vector<int8_t>& w,
                            const std::vector<int8_t>& x, int64_t T, int64_t K, int64_t N) {
  std::vector<float> out(static_cast<size_t>(T * N)), sx(static_cast<size_t>(T), 1.0f),
      sw(static_cast<size_t>(N), 1.0f), bias(static_cast<size_t>(N), 0.0f);
  cpu::Int8Args a;
  a.qx = x.data();
  a.sx = sx.data();
  a.w = w.data();
  a.w_stride = K;
  a.sw = sw.data();
  a.bias = bias.data();
  a.out = out.data();
  a.out_stride = N;
  a.K = K;
  a.T = T;
  rows(a, 0, N);
  return out;
}

std::vector<float> exact_int8(const std::vector<int8_t>& w, const std::vector<int8_t>& x, int64_t T, int64_t K,
                              int64_t N) {
  std::vector<float> out(static_cast<size_t>(T * N));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      int64_t s = 0;
      for (int64_t k = 0; k < K; ++k) s += int64_t{x[t * K + k]} * w[n * K + k];
      out[t * N + n] = static_cast<float>(s);
    }
  return out;
}

void int8_extremes(void (*rows)(const cpu::Int8Args&, int64_t, int64_t)) {
  const int64_t T = 3, K = 200, N = 6;
  std::vector<int8_t> w(static_cast<size_t>(N * K), -128), x(static_cast<size_t>(T * K));
  for (int64_t i = 0; i < T * K; ++i) x[i] = static_cast<int8_t>(i % 3 == 0 ? -127 : 127);
  for (int64_t k = 0; k < K; k += 5) w[K + k] = 127;  // row 1 mixes both signs
  EXPECT_EQ(run_int8(rows, w, x, T, K, N), exact_int8(w, x, T, K, N));
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> code(-128, 127), act(-127, 127);
  for (auto& v : w) v = static_cast<int8_t>(code(rng));
  for (auto& v : x) v = static_cast<int8_t>(act(rng));
  EXPECT_EQ(run_int8(rows, w, x, T, K, N), exact_int8(w, x, T, K, N));
}

TEST(CpuInt8Kernels, Avx2SumsAreExactAtTheExtremes) {
  if (!cpu_isa_supported(CpuIsa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  int8_extremes(cpu::int_kernels_avx2().int8_rows);
}

TEST(CpuInt8Kernels, VnniSumsAreExactAtTheExtremes) {
  if (!cpu::int_vnni_supported())
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU: the vnni kernel is built but cannot run here";
  int8_extremes(&cpu::int8_rows_vnni);
  EXPECT_STREQ(cpu::int_kernels_avx512().int8_path, "avx512 vnni");
}

}  // namespace
}  // namespace inferdesk::test
