// The quantized KV caches on every architecture's golden fixture (CPU backend, which rounds K/V as
// each cache stores them: E4M3 with scale 1.0 as the CUDA cache does, and 8-bit codes with a scale
// and zero point per token and head): greedy tokens against transformers' float32 reference by
// vLLM's rule, and the KL divergence of the next-token distributions against the same model with
// a float32 cache, over every position of prompt + reference continuation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "core/engine/quant_eval.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

// Next-token log-probabilities of every position of `ids`, teacher-forced in one step.
std::vector<std::vector<float>> log_probs(const std::string& dir, const std::vector<int32_t>& ids, KvCacheDtype kv) {
  LoadedModel m = load_model_folder(dir, make_cpu_backend(2));
  std::vector<std::vector<float>> out(ids.size() - 1);
  teacher_forced_log_probs(m, ids, static_cast<int32_t>(ids.size()), kv,
                           [&](int32_t i, const std::vector<float>& lp) { out[static_cast<size_t>(i)] = lp; });
  return out;
}

struct KvBounds {
  double kl_mean;  // largest mean KL accepted
  int top1_percent;
};

// E4M3 keeps 3 mantissa bits: per-element relative error up to 1/16. Measured on these fixtures:
// mean KL 4e-4 to 4.5e-3, top-1 agreement 91 to 98% (near-ties of flat random-weight
// distributions). The 8-bit codes of a row span its range in 255 steps: an error of at most
// (max - min) / 510 per element, far below E4M3's on these rows. Garbled K/V gives a KL of order 1.
KvBounds bounds(KvCacheDtype d) { return d == KvCacheDtype::Fp8 ? KvBounds{2e-2, 85} : KvBounds{2e-3, 95}; }

using KvCase = std::tuple<std::string, KvCacheDtype>;
class GoldenKvCpu : public ::testing::TestWithParam<KvCase> {};

TEST_P(GoldenKvCpu, TokensByVllmsRuleAndSmallKl) {
  const auto& [model, dtype] = GetParam();
  const test::GoldenModel g = test::read_golden(model);
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  opts.kv_cache_dtype = dtype;
  Engine engine(load_model_folder(g.dir, make_cpu_backend()), opts);
  double kl_sum = 0, kl_max = 0;
  int positions = 0, argmax_same = 0, steps = 0;
  for (size_t i = 0; i < g.cases.size(); ++i) {
    auto results = generate_all(engine, {test::golden_request(g.cases[i], g.max_new_tokens)});
    int s = 0;
    // vLLM's rule on the tokens alone: a quantized cache moves log-probabilities by more than
    // float rounding on these random-weight fixtures, whose K/V are small (E4M3's subnormals
    // below 2^-6) and whose flat distributions put many tokens within hundredths.
    EXPECT_EQ(test::compare_with_golden(g.cases[i], results.at(0), INFINITY, &s), "") << model << " case " << i;
    steps += s;
    std::vector<int32_t> ids = g.cases[i].prompt_ids;
    ids.insert(ids.end(), g.cases[i].tokens.begin(), g.cases[i].tokens.end());
    const auto ref = log_probs(g.dir.string(), ids, KvCacheDtype::Auto);
    const auto quant = log_probs(g.dir.string(), ids, dtype);
    for (size_t r = 0; r < ref.size(); ++r) {
      double kl = 0;
      size_t a = 0, b = 0;
      for (size_t v = 0; v < ref[r].size(); ++v) {
        kl += std::exp(ref[r][v]) * (ref[r][v] - quant[r][v]);
        if (ref[r][v] > ref[r][a]) a = v;
        if (quant[r][v] > quant[r][b]) b = v;
      }
      kl_sum += kl;
      kl_max = std::max(kl_max, kl);
      argmax_same += a == b;
      ++positions;
    }
  }
  const double kl_mean = kl_sum / positions;
  std::printf("%s: %s KV vs float32 KV over %d positions: KL mean %.3g, max %.3g; top-1 agreement %.1f%%\n",
              model.c_str(), kv_dtype_name(dtype), positions, kl_mean, kl_max, 100.0 * argmax_same / positions);
  RecordProperty("kl_mean", std::to_string(kl_mean));
  RecordProperty("kl_max", std::to_string(kl_max));
  std::printf("%s: %d of %d greedy steps equal before the first (tolerated) difference\n", model.c_str(), steps,
              static_cast<int>(g.cases.size()) * g.max_new_tokens);
  RecordProperty("equal_steps", steps);
  EXPECT_LT(kl_mean, bounds(dtype).kl_mean);
  EXPECT_GE(argmax_same, positions * bounds(dtype).top1_percent / 100);
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, GoldenKvCpu,
                         ::testing::Combine(::testing::ValuesIn(test::golden_model_names()),
                                            ::testing::Values(KvCacheDtype::Fp8, KvCacheDtype::Int8)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + kv_dtype_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace inferdesk
