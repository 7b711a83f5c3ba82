// Sampler::distribution against a brute-force reference (full sorts, double precision) of the
// same pipeline: the supports must be identical and the probabilities equal to float accuracy.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/sample/sampler.h"

namespace inferdesk {
namespace {

using Ids = std::vector<int32_t>;

std::vector<double> reference(std::vector<float> v, const SamplingParams& p, const Ids& prompt, const Ids& output) {
  const size_t n = v.size();
  std::vector<int> in_prompt(n, 0), count(n, 0);
  for (int32_t id : prompt) in_prompt[static_cast<size_t>(id)] = 1;
  for (int32_t id : output) count[static_cast<size_t>(id)]++;
  for (size_t i = 0; i < n; ++i) {
    if (in_prompt[i] || count[i]) {
      v[i] = v[i] > 0 ? v[i] / p.repetition_penalty : v[i] * p.repetition_penalty;
    }
    v[i] -= p.frequency_penalty * static_cast<float>(count[i]);
    if (count[i]) v[i] -= p.presence_penalty;
  }
  std::vector<double> prob(n, 0.0);
  if (p.temperature < 1e-5f) {
    prob[static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin())] = 1.0;
    return prob;
  }
  for (auto& x : v) x = x / p.temperature;
  const double mx = *std::max_element(v.begin(), v.end());
  std::vector<bool> keep(n, true);
  for (size_t i = 0; i < n; ++i) {
    prob[i] = std::exp(v[i] - mx);
    if (prob[i] < p.min_p) keep[i] = false;  // relative to the best token (weight 1)
  }
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  if (p.top_k > 0) {
    std::vector<int32_t> kept;
    for (int32_t id : order) {
      if (keep[static_cast<size_t>(id)]) kept.push_back(id);
    }
    if (kept.size() > static_cast<size_t>(p.top_k)) {
      const float kth = v[static_cast<size_t>(kept[static_cast<size_t>(p.top_k - 1)])];
      for (size_t i = 0; i < n; ++i) {
        if (v[i] < kth) keep[i] = false;
      }
    }
  }
  if (p.top_p < 1.0f) {
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += keep[i] ? prob[i] : 0.0;
    double cum = 0.0;
    bool reached = false;
    for (int32_t id : order) {
      if (!keep[static_cast<size_t>(id)]) continue;
      if (reached) {
        keep[static_cast<size_t>(id)] = false;
        continue;
      }
      cum += prob[static_cast<size_t>(id)];
      reached = cum >= p.top_p * total;
    }
  }
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += keep[i] ? prob[i] : 0.0;
  for (size_t i = 0; i < n; ++i) prob[i] = keep[i] ? prob[i] / total : 0.0;
  return prob;
}

void compare(const std::vector<float>& logits, const SamplingParams& p, const Ids& prompt, const Ids& output) {
  const std::vector<double> want = reference(logits, p, prompt, output);
  const std::vector<float> got = Sampler{}.distribution(logits, p, prompt, output);
  ASSERT_EQ(got.size(), want.size());
  size_t support = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i] > 0.0f, want[i] > 0.0) << "token " << i << " got " << got[i] << " want " << want[i];
    EXPECT_NEAR(got[i], want[i], 2e-6 + 2e-5 * want[i]) << "token " << i;
    support += want[i] > 0.0;
  }
  EXPECT_GE(support, 1u);
}

std::vector<float> random_logits(size_t n, float sd, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(gen);
  return v;
}

TEST(SamplerDistribution, MatchesBruteForceReference) {
  int cases = 0;
  uint32_t seed = 1;
  for (size_t n : {50u, 3000u}) {
    for (float top_p : {1.0f, 0.9f, 0.5f}) {
      for (int32_t top_k : {0, 5, 2000}) {
        for (float min_p : {0.0f, 0.05f}) {
          for (float temperature : {0.0f, 0.7f, 1.3f}) {
            for (bool penalties : {false, true}) {
              SCOPED_TRACE(::testing::Message() << "n=" << n << " top_p=" << top_p << " top_k=" << top_k
                                                << " min_p=" << min_p << " T=" << temperature << " pen=" << penalties);
              SamplingParams p;
              p.top_p = top_p;
              p.top_k = top_k;
              p.min_p = min_p;
              p.temperature = temperature;
              Ids prompt, output;
              if (penalties) {
                p.repetition_penalty = 1.3f;
                p.frequency_penalty = 0.4f;
                p.presence_penalty = -0.3f;
                std::mt19937 g(seed);
                for (int i = 0; i < 40; ++i) prompt.push_back(static_cast<int32_t>(g() % n));
                for (int i = 0; i < 25; ++i) output.push_back(static_cast<int32_t>(g() % 20));
              }
              compare(random_logits(n, 2.5f, seed++), p, prompt, output);
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 216);
}

TEST(SamplerDistribution, QwenSizedVocabularyTopP) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  compare(random_logits(151936, 3.0f, 99), p, {}, {});
  p.top_p = 0.3f;
  p.min_p = 0.01f;
  compare(random_logits(151936, 6.0f, 100), p, {}, {});
}

TEST(SamplerDistribution, GreedyIsOneHot) {
  SamplingParams p;
  p.temperature = 0.0f;
  const auto d = Sampler{}.distribution(std::vector<float>{0.1f, 0.9f, 0.9f}, p, {}, {});
  EXPECT_EQ(d, (std::vector<float>{0.0f, 1.0f, 0.0f}));
}

}  // namespace
}  // namespace inferdesk
