// The golden fixtures (transformers, float32) on --backend cuda: vLLM's rule, top-1 log-probs
// within 0.05, for the dense and the mixture-of-experts architectures alike (MoE decode steps take
// the small-batch expert path inside CUDA graphs, prefill and batched steps the large-batch path).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/gpu/engine/gpu_engine_util.h"

namespace inferdesk {
namespace {

std::vector<std::string> fixtures(bool moe) {
  std::vector<std::string> out;
  for (const auto& n : test::golden_model_names())
    if (gputest::is_moe_fixture(n) == moe) out.push_back(n);
  return out;
}

class GoldenCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCuda, MatchesTransformers) {
  INFERDESK_REQUIRE_GPU();
  const test::GoldenModel g = test::read_golden(GetParam());
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine engine(load_model_folder(g.dir, make_cuda_backend()), opts);
  int total_steps = 0, total_ties = 0;
  // One at a time (prefill then graph-captured decode) and then all together.
  std::vector<Request> all;
  for (size_t i = 0; i < g.cases.size(); ++i) {
    const Request r = test::golden_request(g.cases[i], g.max_new_tokens);
    all.push_back(r);
    auto results = generate_all(engine, {r});
    ASSERT_EQ(results[0].reason, FinishReason::Length) << results[0].error;
    int steps = 0, ties = 0;
    // MoE fixtures: steps at routing near ties (test::kRouterNearTie) compare only the token.
    EXPECT_EQ(test::compare_with_golden(g.cases[i], results[0], 0.05, &steps, test::kRouterNearTie, &ties), "")
        << GetParam() << " case " << i << " (prompt of " << g.cases[i].prompt_ids.size() << " tokens)";
    EXPECT_EQ(g.cases[i].router_margin.empty(), !gputest::is_moe_fixture(GetParam()))
        << "MoE fixtures carry router margins (tools/golden/router_margins.py)";
    total_steps += steps;
    total_ties += ties;
  }
  EXPECT_GE(total_steps, static_cast<int>(g.cases.size()) * g.max_new_tokens * 3 / 4);
  EXPECT_LE(total_ties * 10, total_steps) << "most steps must have their log-probs compared";
  std::printf("[ figures  ] %s: %d steps equal, %d of them routing near ties (token only)\n", GetParam().c_str(),
              total_steps, total_ties);
  // All together: prefill chunks and decode rows share steps, so other kernels run than alone.
  const auto batched = generate_all(engine, all);
  for (size_t i = 0; i < g.cases.size(); ++i)
    EXPECT_EQ(test::compare_with_golden(g.cases[i], batched[i], 0.05, nullptr, test::kRouterNearTie), "")
        << GetParam() << " case " << i << " batched";
}

INSTANTIATE_TEST_SUITE_P(DenseArchitectures, GoldenCuda, ::testing::ValuesIn(fixtures(false)),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(MoeArchitectures, GoldenCuda, ::testing::ValuesIn(fixtures(true)),
                         [](const auto& info) { return info.param; });

TEST(GoldenCudaMoe, AllThreeMoeFixturesArePresent) {
  // The MoE instantiation above silently runs nothing if a fixture is missing.
  EXPECT_EQ(fixtures(true).size(), 3u);
}

}  // namespace
}  // namespace inferdesk
