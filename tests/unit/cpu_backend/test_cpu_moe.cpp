// CPU backend: MoE routing and expert evaluation against double-precision references.
#include "tests/unit/cpu_backend/cpu_test_util.h"

#include <algorithm>
#include <numeric>

namespace inferdesk::test {
namespace {

class CpuMoeTest : public CpuBackendTest {};

TEST_P(CpuMoeTest, RouteSoftmaxTopKAndRenormalise) {
  const int T = 6, E = 8, k = 3;
  Buffer logits = be->alloc(DType::F32, T, E);
  std::vector<double> lv = random_values(rng, T * E, 3.0);
  // Row 5: ties between experts 2, 4 and 6 (largest) and 1, 7 (next): lower ids win.
  for (int e = 0; e < E; ++e) lv[5 * E + e] = 0.0;
  lv[5 * E + 2] = lv[5 * E + 4] = lv[5 * E + 6] = 1.0;
  lv = set_f32(logits.tensor(), lv);
  for (bool normalize : {false, true}) {
    Buffer ids = be->alloc(DType::I32, T, k), w = be->alloc(DType::F32, T, k);
    poison(w.tensor());
    be->moe_route(logits.tensor(), k, normalize, ids.tensor(), w.tensor());
    std::vector<double> got_ids = get_f32(*be, ids.tensor()), got_w = get_f32(*be, w.tensor());
    std::vector<double> want_w;
    for (int t = 0; t < T; ++t) {
      std::vector<double> p(E);
      double mx = *std::max_element(lv.begin() + t * E, lv.begin() + (t + 1) * E), sum = 0;
      for (int e = 0; e < E; ++e) sum += (p[e] = std::exp(lv[t * E + e] - mx));
      for (double& x : p) x /= sum;
      std::vector<int> order(E);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
      double chosen = 0;
      for (int j = 0; j < k; ++j) chosen += p[order[j]];
      for (int j = 0; j < k; ++j) {
        EXPECT_EQ(got_ids[t * k + j], order[j]) << "token " << t << " slot " << j;
        want_w.push_back(normalize ? p[order[j]] / chosen : p[order[j]]);
      }
    }
    EXPECT_EQ(got_ids[5 * k + 0], 2);
    EXPECT_EQ(got_ids[5 * k + 1], 4);
    EXPECT_EQ(got_ids[5 * k + 2], 6);
    EXPECT_LT(nerr(got_w, want_w), 1e-6);
  }
}

struct Expert {
  std::unique_ptr<HostWeight> gate, up, down;
};

// Runs moe_experts with the given routing and compares with a double reference.
double run_experts(Backend& be, std::mt19937_64& rng, DType dt, int layer, const std::vector<std::vector<int>>& route) {
  const int T = static_cast<int>(route.size()), k = static_cast<int>(route[0].size());
  const int E = 5, H = 67, I = 40;
  std::vector<Expert> ex(E);
  std::vector<ExpertWeights> ew(E);
  for (int e = 0; e < E; ++e) {
    ex[e].gate = make_weight(be, dt, I, H, random_values(rng, I * H, 0.3));
    ex[e].up = make_weight(be, dt, I, H, random_values(rng, I * H, 0.3));
    ex[e].down = make_weight(be, dt, H, I, random_values(rng, H * I, 0.3));
    ew[e] = {ex[e].gate->buf.tensor(), ex[e].up->buf.tensor(), ex[e].down->buf.tensor()};
  }
  Buffer x = be.alloc(DType::F32, T, H), ids = be.alloc(DType::I32, T, k), w = be.alloc(DType::F32, T, k),
         out = be.alloc(DType::F32, T, H);
  std::vector<double> xv = set_f32(x.tensor(), random_values(rng, T * H));
  std::vector<double> wv = set_f32(w.tensor(), random_values(rng, T * k));
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j) static_cast<int32_t*>(ids.tensor().data)[t * k + j] = route[t][j];
  poison(out.tensor());
  be.moe_experts(layer, x.tensor(), ew, ids.tensor(), w.tensor(), out.tensor());
  std::vector<double> want(static_cast<size_t>(T) * H, 0.0);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j) {
      const Expert& e = ex[route[t][j]];
      std::vector<double> a(I);
      for (int i = 0; i < I; ++i) {
        double g = 0, u = 0;
        for (int h = 0; h < H; ++h) {
          g += e.gate->values[i * H + h] * xv[t * H + h];
          u += e.up->values[i * H + h] * xv[t * H + h];
        }
        a[i] = g / (1 + std::exp(-g)) * u;
      }
      for (int h = 0; h < H; ++h) {
        double d = 0;
        for (int i = 0; i < I; ++i) d += e.down->values[h * I + i] * a[i];
        want[t * H + h] += wv[t * k + j] * d;
      }
    }
  return nerr(get_f32(be, out.tensor()), want);
}

TEST_P(CpuMoeTest, RouteRanksANanLogitLast) {
  Buffer logits = be->alloc(DType::F32, 1, 4);
  set_f32(logits.tensor(), {0.5, std::numeric_limits<double>::quiet_NaN(), 0.25, -1.0});
  Buffer ids = be->alloc(DType::I32, 1, 2), w = be->alloc(DType::F32, 1, 2);
  be->moe_route(logits.tensor(), 2, true, ids.tensor(), w.tensor());
  std::vector<double> got = get_f32(*be, ids.tensor());
  EXPECT_EQ(got, (std::vector<double>{0, 2}));
  std::vector<double> gw = get_f32(*be, w.tensor());
  EXPECT_NEAR(gw[0] + gw[1], 1.0, 1e-6);
}

TEST_P(CpuMoeTest, ExpertsMatchReferenceWithIdleExperts) {
  // Experts 1 and 3 receive nothing; expert 4 gets most tokens.
  std::vector<std::vector<int>> route = {{4, 0}, {2, 4}, {4, 2}, {0, 4}, {4, 0}, {2, 0}, {4, 2}};
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    EXPECT_LT(run_experts(*be, rng, dt, 0, route), 2e-6) << dtype_name(dt);
}

TEST_P(CpuMoeTest, AllTokensToOneExpertAndManyTokens) {
  std::vector<std::vector<int>> one(9, std::vector<int>{3});
  EXPECT_LT(run_experts(*be, rng, DType::BF16, 0, one), 2e-6);
  std::vector<std::vector<int>> many;
  for (int t = 0; t < 45; ++t) many.push_back({t % 5, (t * 3 + 1) % 5});
  EXPECT_LT(run_experts(*be, rng, DType::BF16, 0, many), 2e-6);  // exercises the GEMM path
}

TEST_P(CpuMoeTest, CountersAccumulatePerLayerAndExpert) {
  be->init_expert_counters(3, 5);
  std::vector<std::vector<int>> route = {{4, 0}, {2, 4}, {4, 2}};
  run_experts(*be, rng, DType::BF16, 1, route);
  run_experts(*be, rng, DType::BF16, 1, route);
  run_experts(*be, rng, DType::BF16, 2, {{1, 3}});
  std::vector<int64_t> c = be->expert_counts();
  ASSERT_EQ(c.size(), 15u);
  std::vector<int64_t> want = {0, 0, 0, 0, 0, 2, 0, 4, 0, 6, 0, 1, 0, 1, 0};
  EXPECT_EQ(c, want);
  be->init_expert_counters(3, 5);
  EXPECT_EQ(be->expert_counts(), std::vector<int64_t>(15, 0));
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuMoeTest, testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace inferdesk::test
