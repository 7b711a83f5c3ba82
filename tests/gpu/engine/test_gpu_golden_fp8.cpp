// The FP8 golden fixtures (tools/golden/make_fp8_golden.py) on --backend cuda: the dense
// architectures in both formats by vLLM's rule against the float32 FP8 reference (BF16
// activations: the chosen token's log-probability within 0.1 where the CPU backend matches the
// reference at 0.02; the token rule alone on the fixtures the CPU does not match yet, see
// tests/golden/models/test_golden_fp8_cpu.cpp), and a typed error for FP8 experts, which the
// CUDA backend does not run yet.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "tests/gpu/engine/gpu_engine_util.h"

namespace inferdesk {
namespace {

struct Fp8Fixture {
  std::string name;
  bool cpu_matches;
};

std::vector<Fp8Fixture> dense_fixtures() {
  return {{"llama-block", true},    {"mistral-channel", true}, {"qwen2-channel", true}, {"llama-channel", false},
          {"mistral-block", false}, {"qwen2-block", false},    {"qwen3-channel", false}, {"qwen3-block", false}};
}

class GoldenFp8Cuda : public ::testing::TestWithParam<Fp8Fixture> {};

TEST_P(GoldenFp8Cuda, MatchesTheReference) {
  INFERDESK_REQUIRE_GPU();
  const std::string name = GetParam().name;
  const test::GoldenModel g = test::read_golden_at(test::golden_fp8_dir() / name, name);
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine engine(load_model_folder(g.dir, make_cuda_backend()), opts);
  int total = 0;
  for (size_t i = 0; i < g.cases.size(); ++i) {
    auto results = generate_all(engine, {test::golden_request(g.cases[i], g.max_new_tokens)});
    ASSERT_EQ(results.at(0).reason, FinishReason::Length) << results[0].error;
    int steps = 0;
    const double tol = GetParam().cpu_matches ? 0.1 : INFINITY;
    EXPECT_EQ(test::compare_with_golden(g.cases[i], results[0], tol, &steps), "") << name << " case " << i;
    total += steps;
  }
  std::printf("[ figures  ] %s: %d of %d steps equal\n", name.c_str(), total,
              static_cast<int>(g.cases.size()) * g.max_new_tokens);
}

INSTANTIATE_TEST_SUITE_P(Dense, GoldenFp8Cuda, ::testing::ValuesIn(dense_fixtures()), [](const auto& info) {
  std::string n = info.param.name;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
});

TEST(GoldenFp8CudaMoe, Fp8ExpertsAreATypedError) {
  INFERDESK_REQUIRE_GPU();
  const std::string name = "mixtral-channel";
  const test::GoldenModel g = test::read_golden_at(test::golden_fp8_dir() / name, name);
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine engine(load_model_folder(g.dir, make_cuda_backend()), opts);
  auto results = generate_all(engine, {test::golden_request(g.cases[0], 4)});
  EXPECT_EQ(results.at(0).reason, FinishReason::Error);
  EXPECT_NE(results[0].error.find("quantized experts"), std::string::npos) << results[0].error;
}

}  // namespace
}  // namespace inferdesk
