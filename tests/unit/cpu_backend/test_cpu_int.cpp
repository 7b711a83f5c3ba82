// Integer weights (QuantScheme::Int): the CPU backend's linear and experts against a double-precision
// implementation of the definition in core/backend/quant.h, for 4- and 8-bit codes, symmetric and
// with zero points, per channel, per group and with a g_idx, weight-only and W8A8.
#include <algorithm>
#include <cmath>

#include "tests/unit/cpu_backend/int_test_util.h"

namespace inferdesk::test {
namespace {

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
