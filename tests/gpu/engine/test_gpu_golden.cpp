// The golden fixtures (transformers, float32) on --backend cuda: vLLM's rule, top-1 log-probs
// within 0.05. MoE architectures are issue 6's and are checked there; here they must be refused
// with a clear Unsupported error, not crash.
#include <gtest/gtest.h>

#include "tests/gpu/engine/gpu_engine_util.h"

namespace inferdesk {
namespace {

bool is_moe_fixture(const std::string& name) {
  return name == "mixtral" || name == "qwen2_moe" || name == "qwen3_moe";
}

std::vector<std::string> dense_fixtures() {
  std::vector<std::string> out;
  for (const auto& n : test::golden_model_names())
    if (!is_moe_fixture(n)) out.push_back(n);
  return out;
}

class GoldenCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCuda, MatchesTransformers) {
  INFERDESK_REQUIRE_GPU();
  const test::GoldenModel g = test::read_golden(GetParam());
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine engine(load_model_folder(g.dir, make_cuda_backend()), opts);
  int total_steps = 0;
  // One at a time (prefill then graph-captured decode) and then all together.
  std::vector<Request> all;
  for (size_t i = 0; i < g.cases.size(); ++i) {
    Request r = gputest::greedy(g.cases[i].prompt_ids, g.max_new_tokens);
    all.push_back(r);
    auto results = generate_all(engine, {r});
    ASSERT_EQ(results[0].reason, FinishReason::Length) << results[0].error;
    int steps = 0;
    EXPECT_EQ(test::compare_with_golden(g.cases[i], results[0], 0.05, &steps), "")
        << GetParam() << " case " << i << " (prompt of " << g.cases[i].prompt_ids.size() << " tokens)";
    total_steps += steps;
  }
  EXPECT_GE(total_steps, static_cast<int>(g.cases.size()) * g.max_new_tokens * 3 / 4);
  const auto batched = generate_all(engine, all);
  for (size_t i = 0; i < g.cases.size(); ++i)
    EXPECT_EQ(test::compare_with_golden(g.cases[i], batched[i], 0.05), "")
        << GetParam() << " case " << i << " batched";
}

INSTANTIATE_TEST_SUITE_P(DenseArchitectures, GoldenCuda, ::testing::ValuesIn(dense_fixtures()),
                         [](const auto& info) { return info.param; });

TEST(GoldenCudaMoe, MoeModelsAreRefusedWithAMessage) {
  INFERDESK_REQUIRE_GPU();
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine engine(load_model_folder(test::golden_models_dir() / "mixtral", make_cuda_backend()), opts);
  auto r = generate_all(engine, {gputest::greedy({5, 6, 7}, 2)});
  EXPECT_EQ(r[0].reason, FinishReason::Error);
  EXPECT_NE(r[0].error.find("--backend cpu"), std::string::npos) << r[0].error;
}

}  // namespace
}  // namespace inferdesk
