// Round-to-nearest int8 (per channel, weight-only) on load against transformers' BF16-checkpoint
// float32 outputs of every architecture, on the CPU: by vLLM's rule, with a log-probability
// tolerance that allows int8's rounding of the weights (at most half of amax / 127 per weight).
// Int4 (group 128) moves random-weight models too far for a token rule; its arithmetic is checked
// by the unit tests (unit/io/test_int_weights.cpp, unit/cpu_backend/test_cpu_int.cpp).
#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

// Measured on these fixtures: the chosen tokens' log-probabilities move by a few hundredths, at
// most 0.14 (qwen3_moe, case 1, step 11, as errors build up over the sequence). Int8 rounding
// that went wrong (a wrong scale, a code off by one step) moves them by far more.
constexpr double kInt8LogprobTol = 0.2;

class GoldenInt8OnLoadCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenInt8OnLoadCpu, FollowsTheReferenceByVllmsRule) {
  const test::GoldenModel g = test::read_golden(GetParam());
  LoadOptions lo;
  lo.quantization = LoadQuantization::Int8;
  LoadedModel m = load_model_folder(g.dir, make_cpu_backend(), {}, lo);
  EXPECT_NE(m.quantization.find("int8"), std::string::npos) << m.quantization;
  int total = 0;
  // Int8 weights move MoE router logits as BF16 rounding does: near-tie routing steps
  // (kRouterNearTie) compare tokens only, as for the BF16 backends.
  EXPECT_EQ(test::run_golden_cases(g, std::move(m), kInt8LogprobTol, &total, test::kRouterNearTie), "") << GetParam();
  // Most steps are compared (the rule stops at the first differing token).
  EXPECT_GE(total, static_cast<int>(g.cases.size()) * g.max_new_tokens / 2);
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, GoldenInt8OnLoadCpu,
                         ::testing::Values("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace inferdesk
