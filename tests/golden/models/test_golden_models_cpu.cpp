// Every architecture's golden fixture on the CPU backend: greedy tokens and top-1
// log-probabilities must match transformers by vLLM's rule (tolerance 1e-3).
#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

class GoldenCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCpu, MatchesTransformersOneRequestAtATime) {
  const test::GoldenModel g = test::read_golden(GetParam());
  LoadedModel m = load_model_folder(g.dir, make_cpu_backend());
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine engine(std::move(m), opts);
  int total_steps = 0;
  for (size_t i = 0; i < g.cases.size(); ++i) {
    const Request r = test::golden_request(g.cases[i], g.max_new_tokens);
    auto results = generate_all(engine, {r});
    ASSERT_EQ(results.size(), 1u);
    ASSERT_EQ(results[0].reason, FinishReason::Length) << results[0].error;
    int steps = 0;
    const std::string diff = test::compare_with_golden(g.cases[i], results[0], 1e-3, &steps);
    EXPECT_EQ(diff, "") << GetParam() << " case " << i << " (prompt of " << g.cases[i].prompt_ids.size() << " tokens)";
    total_steps += steps;
  }
  // The rule stops at the first tolerated difference; most steps must still be compared.
  EXPECT_GE(total_steps, static_cast<int>(g.cases.size()) * g.max_new_tokens * 3 / 4);
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, GoldenCpu, ::testing::ValuesIn(test::golden_model_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace inferdesk
