// FP8 checkpoints of every architecture on the CPU backend against the reference of
// tools/golden/make_fp8_golden.py (float32 torch computing each FP8 linear by the format's
// definition): the compressed-tensors per-channel folders, the block-wise folders (packed by
// transformers' FineGrainedFP8 where it quantizes the shapes), and the BF16 fixtures quantized to
// FP8 on load, which must reproduce the per-channel folders' reference.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

// Greedy cases of `g` on `m`; returns the compared steps.
int run_cases(const test::GoldenModel& g, LoadedModel m, const std::string& what) {
  // Both sides quantize activations by the same float32 arithmetic, but a sum accumulated in a
  // different order can land an activation on the other side of an E4M3 rounding boundary (an
  // eighth of its magnitude). The fixture measures how far that moves its own log-probabilities
  // (float64 against float32); each float32 side is within about that of the exact definition,
  // so the two are within twice it, and within 0.02 where the fixture is insensitive.
  const double tol = std::max(2e-2, 2 * g.float64_logprob_spread);
  int total = 0;
  EXPECT_EQ(test::run_golden_cases(g, std::move(m), tol, &total), "") << what;
  return total;
}

struct Fp8Case {
  std::string arch, variant;
};

class GoldenFp8Cpu : public ::testing::TestWithParam<Fp8Case> {};

TEST_P(GoldenFp8Cpu, MatchesTheReference) {
  const std::string name = GetParam().arch + "-" + GetParam().variant;
  const test::GoldenModel g = test::read_golden_at(test::golden_fp8_dir() / name, name);
  LoadedModel m = load_model_folder(g.dir, make_cpu_backend());
  EXPECT_NE(m.quantization, "none");
  const int steps = run_cases(g, std::move(m), name);
  EXPECT_GE(steps, static_cast<int>(g.cases.size()) * g.max_new_tokens / 2);
}

class GoldenFp8OnLoadCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenFp8OnLoadCpu, QuantizedOnLoadMatchesThePerChannelReference) {
  const std::string name = GetParam() + "-channel";
  const test::GoldenModel g = test::read_golden_at(test::golden_fp8_dir() / name, name);
  LoadOptions lo;
  lo.quantization = LoadQuantization::Fp8;
  LoadedModel m = load_model_folder(test::golden_models_dir() / GetParam(), make_cpu_backend(), {}, lo);
  const int steps = run_cases(g, std::move(m), GetParam() + " quantized on load");
  EXPECT_GE(steps, static_cast<int>(g.cases.size()) * g.max_new_tokens / 2);
}

std::vector<std::string> archs() { return {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}; }
std::vector<Fp8Case> fp8_cases() {
  std::vector<Fp8Case> c;
  for (const auto& a : archs())
    for (const char* v : {"channel", "block"}) c.push_back({a, v});
  return c;
}
std::vector<std::string> on_load_cases() { return archs(); }

INSTANTIATE_TEST_SUITE_P(AllArchitectures, GoldenFp8Cpu, ::testing::ValuesIn(fp8_cases()),
                         [](const auto& info) { return info.param.arch + "_" + info.param.variant; });
INSTANTIATE_TEST_SUITE_P(AllArchitectures, GoldenFp8OnLoadCpu, ::testing::ValuesIn(on_load_cases()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace inferdesk
