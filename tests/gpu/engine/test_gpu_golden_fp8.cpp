// The FP8 golden fixtures (tools/golden/make_fp8_golden.py) on --backend cuda: every architecture,
// MoE ones included, in both formats, by vLLM's rule against the float32 FP8 reference (BF16
// activations round before they are quantized, which moves E4M3 codes: the chosen token's
// log-probability within 0.25, measured up to 0.21 on fixtures the float64 reference does not
// move, plus twice what float64 moves the fixture, as on the CPU). The block fixtures' 64-row k/v
// (and the Qwen MoE ones' 64-row expert gate / up) do not fill a 128-row scale block: they load
// apart instead of stacked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/util/error.h"
#include "tests/gpu/engine/gpu_engine_util.h"

namespace inferdesk {
namespace {

std::vector<std::string> dense_fixtures() {
  return {"mistral-channel", "qwen2-channel", "llama-channel", "qwen3-channel",
          "qwen3-block",     "llama-block",   "mistral-block", "qwen2-block"};
}

std::vector<std::string> moe_fixtures() {
  return {"mixtral-channel", "mixtral-block",     "qwen2_moe-channel",
          "qwen2_moe-block", "qwen3_moe-channel", "qwen3_moe-block"};
}

class GoldenFp8Cuda : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenFp8Cuda, MatchesTheReference) {
  INFERDESK_REQUIRE_GPU();
  const std::string name = GetParam();
  const test::GoldenModel g = test::read_golden_at(test::golden_fp8_dir() / name, name);
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine engine(load_model_folder(g.dir, make_cuda_backend()), opts);
  int total = 0;
  for (size_t i = 0; i < g.cases.size(); ++i) {
    auto results = generate_all(engine, {test::golden_request(g.cases[i], g.max_new_tokens)});
    ASSERT_EQ(results.at(0).reason, FinishReason::Length) << results[0].error;
    int steps = 0;
    const double tol = 0.25 + 2 * g.float64_logprob_spread;
    EXPECT_EQ(test::compare_with_golden(g.cases[i], results[0], tol, &steps), "") << name << " case " << i;
    total += steps;
  }
  std::printf("[ figures  ] %s: %d of %d steps equal\n", name.c_str(), total,
              static_cast<int>(g.cases.size()) * g.max_new_tokens);
}

// Every case of an FP8 MoE fixture twice in one batch: decode steps of 12 rows take the grouped
// expert path inside captured graphs, the prefill of several prompts the large one; each result
// must still match the reference by vLLM's token rule (batched rows round differently than a case
// run alone, and a tiny MoE fixture's near-tied routing can then pick another expert).
TEST(GoldenFp8CudaMoe, BatchedCasesMatchTheReference) {
  INFERDESK_REQUIRE_GPU();
  for (const char* name : {"qwen3_moe-channel", "mixtral-block"}) {
    const test::GoldenModel g = test::read_golden_at(test::golden_fp8_dir() / name, name);
    EngineOptions opts;
    opts.num_kv_blocks = 256;
    Engine engine(load_model_folder(g.dir, make_cuda_backend()), opts);
    std::vector<Request> reqs;
    for (int rep = 0; rep < 2; ++rep)
      for (const auto& c : g.cases) reqs.push_back(test::golden_request(c, g.max_new_tokens));
    const auto results = generate_all(engine, reqs);
    int total = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      ASSERT_EQ(results[i].reason, FinishReason::Length) << results[i].error;
      int steps = 0;
      EXPECT_EQ(test::compare_with_golden(g.cases[i % g.cases.size()], results[i], INFINITY, &steps), "")
          << name << " request " << i;
      total += steps;
    }
    const CudaMoePathCounts c = cuda_moe_path_counts(*engine.model().backend);
    EXPECT_GT(c.grouped, 0) << name;
    EXPECT_GT(c.large, 0) << name;
    std::printf("[ figures  ] %s batched: %d of %d steps equal; expert paths small %lld grouped %lld large %lld\n",
                name, total, static_cast<int>(results.size()) * g.max_new_tokens, static_cast<long long>(c.small),
                static_cast<long long>(c.grouped), static_cast<long long>(c.large));
  }
}

std::string fixture_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Dense, GoldenFp8Cuda, ::testing::ValuesIn(dense_fixtures()), fixture_name);
INSTANTIATE_TEST_SUITE_P(Moe, GoldenFp8Cuda, ::testing::ValuesIn(moe_fixtures()), fixture_name);

}  // namespace
}  // namespace inferdesk
