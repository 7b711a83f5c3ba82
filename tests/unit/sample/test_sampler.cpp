#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/sample/sampler.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

using Ids = std::vector<int32_t>;

SamplingParams params_with(float temperature) {
  SamplingParams p;
  p.temperature = temperature;
  return p;
}

// Logits whose softmax is exactly proportional to `probs`.
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

// Draws `n` tokens with a fixed seed and returns the count of each token.
std::vector<int> histogram(const std::vector<float>& logits, const SamplingParams& p, int n, uint64_t seed = 1234) {
  Sampler s;
  SamplerRng rng(seed);
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) counts[static_cast<size_t>(s.sample(logits, p, {}, {}, rng).token)]++;
  return counts;
}

// Pearson chi-square of `counts` against expected probabilities (tokens with p == 0 must have
// count 0 and are asserted on separately).
double chi_square(const std::vector<int>& counts, const std::vector<double>& expected) {
  const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  double chi = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "excluded token " << i << " was drawn";
      continue;
    }
    const double e = n * expected[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

// Chi-square critical values at p = 0.001 for 1..4 degrees of freedom.
double chi_critical(size_t dof) {
  static const double kCrit[] = {0, 10.83, 13.82, 16.27, 18.47};
  return kCrit[std::min<size_t>(dof, 4)];
}

TEST(Sampler, GreedyPicksArgmaxAndLowestIdOnTies) {
  Sampler s;
  SamplerRng rng(1);
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f};
  auto r = s.sample(logits, params_with(0.0f), {}, {}, rng);
  EXPECT_EQ(r.token, 1);
  r = s.sample(logits, params_with(5e-6f), {}, {}, rng);
  EXPECT_EQ(r.token, 1);
  const std::vector<float> single = {-2.0f, 7.0f, 1.0f};
  EXPECT_EQ(s.sample(single, params_with(0.0f), {}, {}, rng).token, 1);
}

TEST(Sampler, GreedyDoesNotAdvanceTheGenerator) {
  Sampler s;
  SamplerRng used(77), fresh(77);
  const std::vector<float> logits = {1.0f, 2.0f, 0.0f};
  for (int i = 0; i < 5; ++i) s.sample(logits, params_with(0.0f), {}, {}, used);
  EXPECT_EQ(used.uniform(), fresh.uniform());
}

TEST(Sampler, PenaltiesChangeLogitsExactly) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f, -1.0f, 3.0f};
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  const Ids prompt = {0, 1, 0};
  const Ids output = {2, 2, 3};
  apply_penalties(l, p, prompt, output);
  EXPECT_FLOAT_EQ(l[0], 1.0f);    // prompt, positive: 2 / 2
  EXPECT_FLOAT_EQ(l[1], -4.0f);   // prompt, negative: -2 * 2
  EXPECT_FLOAT_EQ(l[2], -0.75f);  // output x2: 1/2 - 2*0.5 - 0.25
  EXPECT_FLOAT_EQ(l[3], -0.5f);   // output x1: 0.5/2 - 0.5 - 0.25
  EXPECT_FLOAT_EQ(l[4], -1.0f);   // unseen
  EXPECT_FLOAT_EQ(l[5], 3.0f);    // unseen
}

TEST(Sampler, NeutralPenaltiesLeaveLogitsAlone) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f};
  const std::vector<float> before = l;
  apply_penalties(l, SamplingParams{}, Ids{0, 1}, Ids{2, 2});
  EXPECT_EQ(l, before);
}

TEST(Sampler, PenaltyRejectsOutOfRangeIds) {
  std::vector<float> l = {0.0f, 1.0f};
  SamplingParams p;
  p.repetition_penalty = 1.5f;
  EXPECT_THROW(apply_penalties(l, p, Ids{2}, {}), Error);
  Sampler s;
  SamplerRng rng(1);
  try {
    s.sample(l, params_with(0.0f), {}, Ids{-1}, rng);
    ADD_FAILURE() << "accepted id -1";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
}

TEST(Sampler, PenaltiesSteerGreedyChoice) {
  Sampler s;
  SamplerRng rng(1);
  const std::vector<float> logits = {3.0f, 2.9f, 0.0f};
  SamplingParams p = params_with(0.0f);
  EXPECT_EQ(s.sample(logits, p, {}, Ids{0}, rng).token, 0);
  p.repetition_penalty = 1.5f;  // 3 / 1.5 = 2 < 2.9
  EXPECT_EQ(s.sample(logits, p, {}, Ids{0}, rng).token, 1);
  p.repetition_penalty = 1.0f;
  p.presence_penalty = 0.2f;  // 3 - 0.2 = 2.8 < 2.9
  EXPECT_EQ(s.sample(logits, p, {}, Ids{0}, rng).token, 1);
}

TEST(Sampler, TopK1EqualsGreedy) {
  Sampler s;
  std::mt19937 gen(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  SamplerRng rng(9);
  SamplingParams p = params_with(1.3f);
  p.top_k = 1;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(300);
    for (auto& x : logits) x = nd(gen);
    const int32_t greedy = s.sample(logits, params_with(0.0f), {}, {}, rng).token;
    EXPECT_EQ(s.sample(logits, p, {}, {}, rng).token, greedy);
  }
}

TEST(Sampler, PlainTemperatureSamplingMatchesSoftmax) {
  const std::vector<double> probs = {0.5, 0.3, 0.15, 0.05};
  auto counts = histogram(logits_of(probs), params_with(1.0f), 20000);
  EXPECT_LT(chi_square(counts, probs), chi_critical(3));
  // Temperature 2 flattens: p_i proportional to sqrt(p_i).
  std::vector<double> flat;
  double z = 0;
  for (double q : probs) z += std::sqrt(q);
  for (double q : probs) flat.push_back(std::sqrt(q) / z);
  counts = histogram(logits_of(probs), params_with(2.0f), 20000);
  EXPECT_LT(chi_square(counts, flat), chi_critical(3));
}

TEST(Sampler, TopPExcludesTailAndRenormalises) {
  const std::vector<double> probs = {0.5, 0.3, 0.15, 0.05};
  SamplingParams p = params_with(1.0f);
  p.top_p = 0.75f;  // 0.5 < 0.75 <= 0.8: keep tokens 0 and 1
  auto counts = histogram(logits_of(probs), p, 20000);
  EXPECT_LT(chi_square(counts, {0.625, 0.375, 0.0, 0.0}), chi_critical(1));
  p.top_p = 0.4f;  // the best token alone reaches 0.4
  counts = histogram(logits_of(probs), p, 2000);
  EXPECT_EQ(counts[0], 2000);
}

TEST(Sampler, TopPOnLargeFlatVocabularyKeepsLowestIdsOnTies) {
  // 1000 equal tokens, top_p 0.5005: the 501 lowest ids (ties broken by id) and nothing else.
  const std::vector<float> logits(1000, 0.25f);
  SamplingParams p = params_with(1.0f);
  p.top_p = 0.5005f;
  auto counts = histogram(logits, p, 30000);
  for (int i = 501; i < 1000; ++i) ASSERT_EQ(counts[static_cast<size_t>(i)], 0) << i;
  for (int i = 0; i < 501; ++i) EXPECT_GT(counts[static_cast<size_t>(i)], 0) << i;
}

TEST(Sampler, MinPExcludesRelativeToBest) {
  const std::vector<double> probs = {0.5, 0.3, 0.15, 0.05};
  SamplingParams p = params_with(1.0f);
  p.min_p = 0.2f;  // threshold 0.1: token 3 (0.05) goes
  auto counts = histogram(logits_of(probs), p, 20000);
  EXPECT_LT(chi_square(counts, {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0}), chi_critical(2));
  // After temperature 0.5 probabilities are proportional to p^2 = .25, .09, .0225, .0025;
  // min_p 0.1 keeps only those >= 0.025 relative weight of .25: tokens 0 and 1.
  p.temperature = 0.5f;
  p.min_p = 0.1f;
  counts = histogram(logits_of(probs), p, 20000);
  EXPECT_LT(chi_square(counts, {0.25 / 0.34, 0.09 / 0.34, 0.0, 0.0}), chi_critical(1));
}

TEST(Sampler, TopKKeepsKBest) {
  const std::vector<double> probs = {0.1, 0.4, 0.05, 0.3, 0.15};
  SamplingParams p = params_with(1.0f);
  p.top_k = 2;
  auto counts = histogram(logits_of(probs), p, 20000);
  EXPECT_LT(chi_square(counts, {0.0, 0.4 / 0.7, 0.0, 0.3 / 0.7, 0.0}), chi_critical(1));
  p.top_k = -1;  // off
  counts = histogram(logits_of(probs), p, 20000);
  EXPECT_LT(chi_square(counts, probs), chi_critical(4));
}

TEST(Sampler, FiltersCompose) {
  // top_k 3 keeps {1, 3, 4}; renormalised .4/.85, .3/.85, .15/.85; top_p .8 then needs the
  // first two (.47 + .35 = .82).
  const std::vector<double> probs = {0.1, 0.4, 0.05, 0.3, 0.15};
  SamplingParams p = params_with(1.0f);
  p.top_k = 3;
  p.top_p = 0.8f;
  auto counts = histogram(logits_of(probs), p, 20000);
  EXPECT_LT(chi_square(counts, {0.0, 0.4 / 0.7, 0.0, 0.3 / 0.7, 0.0}), chi_critical(1));
}

TEST(Sampler, SameSeedSameSequenceWhateverIsInterleaved) {
  Sampler s;
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<std::vector<float>> rows(50, std::vector<float>(500));
  for (auto& r : rows) {
    for (auto& x : r) x = nd(gen);
  }
  SamplingParams p = params_with(0.8f);
  p.top_p = 0.95f;
  auto run = [&](uint64_t seed, bool interleave) {
    SamplerRng rng(seed), other(999);
    Ids out;
    for (const auto& r : rows) {
      if (interleave) s.sample(r, p, {}, {}, other);  // another request in the same batch
      out.push_back(s.sample(r, p, {}, out, rng).token);
    }
    return out;
  };
  const Ids a = run(42, false);
  EXPECT_EQ(a, run(42, false));
  EXPECT_EQ(a, run(42, true));
  EXPECT_NE(a, run(43, false));
}

TEST(Sampler, LogprobsAreRawLogSoftmax) {
  Sampler s;
  SamplerRng rng(11);
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, -2.0f, 0.5f, 2.0f, -1.0f, 0.0f, 1.5f, 2.5f};
  SamplingParams p = params_with(0.7f);
  p.logprobs = 10;
  p.repetition_penalty = 3.0f;  // penalties and temperature must not change reported logprobs
  auto r = s.sample(logits, p, Ids{1, 2}, {}, rng);
  ASSERT_EQ(r.top.size(), 10u);
  double sum = 0.0;
  for (const auto& t : r.top) sum += std::exp(static_cast<double>(t.logprob));
  EXPECT_NEAR(sum, 1.0, 1e-5);
  for (size_t i = 1; i < r.top.size(); ++i) {
    EXPECT_GE(r.top[i - 1].logprob, r.top[i].logprob);
    if (r.top[i - 1].logprob == r.top[i].logprob) {
      EXPECT_LT(r.top[i - 1].id, r.top[i].id);
    }
  }
  EXPECT_EQ(r.top[0].id, 1);  // tie between 1 and 2 -> lower id first
  EXPECT_EQ(r.top[1].id, 2);
  double z = 0.0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  const double expected = logits[static_cast<size_t>(r.token)] - std::log(z);
  EXPECT_NEAR(r.logprob, expected, 1e-5);
  EXPECT_NEAR(r.top[0].logprob, 3.0 - std::log(z), 1e-5);
  p.logprobs = 0;
  EXPECT_TRUE(s.sample(logits, p, {}, {}, rng).top.empty());
}

TEST(Sampler, TopLogprobsMatchFullSortOnLargeVocabulary) {
  std::mt19937 gen(17);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> logits(151936);
  for (auto& x : logits) x = std::round(nd(gen) * 8.0f) / 8.0f;  // many exact ties
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  auto top = top_logprobs(logits, 0.0, 20);
  ASSERT_EQ(top.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(top[i].id, order[i]) << i;
    EXPECT_EQ(top[i].logprob, logits[static_cast<size_t>(order[i])]);
  }
}

TEST(Sampler, RejectsBrokenLogits) {
  Sampler s;
  SamplerRng rng(1);
  const float inf = std::numeric_limits<float>::infinity();
  auto code_of = [&](const std::vector<float>& l) {
    try {
      s.sample(l, SamplingParams{}, {}, {}, rng);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::Cancelled;  // "no error" marker
  };
  EXPECT_EQ(code_of({}), ErrorCode::InvalidArgument);
  EXPECT_EQ(code_of({1.0f, std::nanf("")}), ErrorCode::Internal);
  EXPECT_EQ(code_of({-inf, -inf}), ErrorCode::Internal);
  // -inf entries next to finite ones are fine (masked tokens) and never drawn.
  std::vector<float> masked = {-inf, 0.0f, -inf, 0.0f};
  auto counts = histogram(masked, SamplingParams{}, 2000);
  EXPECT_EQ(counts[0] + counts[2], 0);
}

// A padded vocabulary: the ids at or above the limit have the highest logits, yet are never
// sampled or reported, and the log-probabilities are normalised over the ids below the limit.
TEST(Sampler, VocabularyLimitMasksPaddedIds) {
  constexpr int kLimit = 12;
  std::vector<float> logits(16);
  for (int i = 0; i < 16; ++i) logits[static_cast<size_t>(i)] = i < kLimit ? 0.1f * static_cast<float>(i) : 9.0f;
  const Sampler unlimited, limited(kLimit);
  SamplerRng rng(5);
  EXPECT_GE(unlimited.sample(logits, params_with(0), {}, {}, rng).token, kLimit);  // the control
  const SampleResult greedy = limited.sample(logits, params_with(0), {}, {}, rng);
  EXPECT_EQ(greedy.token, kLimit - 1);
  double z = 0;
  for (int i = 0; i < kLimit; ++i) z += std::exp(static_cast<double>(logits[static_cast<size_t>(i)]));
  EXPECT_NEAR(greedy.logprob, logits[kLimit - 1] - std::log(z), 1e-5);

  SamplingParams p = params_with(1.0f);
  p.logprobs = 5;
  std::vector<int> counts(16, 0);
  for (int i = 0; i < 3000; ++i) {
    const SampleResult r = limited.sample(logits, p, {}, {}, rng);
    ++counts[static_cast<size_t>(r.token)];
    for (const TokenLogprob& t : r.top) EXPECT_LT(t.id, kLimit);
  }
  for (int i = kLimit; i < 16; ++i) EXPECT_EQ(counts[static_cast<size_t>(i)], 0) << "padded id " << i;
  const std::vector<float> dist = limited.distribution(logits, p, {}, {});
  ASSERT_EQ(dist.size(), 16u);
  for (int i = kLimit; i < 16; ++i) EXPECT_EQ(dist[static_cast<size_t>(i)], 0.0f);
  EXPECT_NEAR(std::accumulate(dist.begin(), dist.end(), 0.0), 1.0, 1e-5);

  // A padded id among the outputs is a valid model id (penalties skip it); one past the row is not.
  SamplingParams pen = params_with(0);
  pen.repetition_penalty = 2.0f;
  const Ids outputs = {14, kLimit - 1};
  EXPECT_LT(limited.sample(logits, pen, {}, outputs, rng).token, kLimit);
  EXPECT_THROW(limited.sample(logits, pen, {}, Ids{16}, rng), Error);
}

// Cost of one sample() on a 151,936-token row (Qwen vocabulary). Prints the median; asserts the
// optimised paths pick the same token as an unfiltered greedy pass where they must.
TEST(SamplerPerf, QwenSizedVocabulary) {
  std::mt19937 gen(23);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> logits(151936);
  for (auto& x : logits) x = nd(gen);
  Sampler s;
  SamplerRng rng(5);
  Ids prompt(2000), output(500);
  for (auto& t : prompt) t = static_cast<int32_t>(gen() % logits.size());
  for (auto& t : output) t = static_cast<int32_t>(gen() % logits.size());
  struct Case {
    const char* name;
    SamplingParams p;
  };
  std::vector<Case> cases(5);
  cases[0] = {"greedy", params_with(0.0f)};
  cases[1] = {"temperature 0.8", params_with(0.8f)};
  cases[2] = {"top_p 0.9", params_with(0.8f)};
  cases[2].p.top_p = 0.9f;
  cases[3] = {"top_k 50 + top_p 0.95 + penalties + 5 logprobs", params_with(0.8f)};
  cases[3].p.top_k = 50;
  cases[3].p.top_p = 0.95f;
  cases[3].p.repetition_penalty = 1.1f;
  cases[3].p.frequency_penalty = 0.2f;
  cases[3].p.logprobs = 5;
  cases[4] = {"top_k 1", params_with(0.8f)};
  cases[4].p.top_k = 1;
  const int32_t greedy = s.sample(logits, cases[0].p, {}, {}, rng).token;
  SamplerScratch scratch;
  for (auto& c : cases) {
    for (bool reuse : {false, true}) {
      std::vector<double> us;
      int32_t tok = -1;
      for (int i = 0; i < 21; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        const bool pen = c.p.repetition_penalty != 1.0f;
        const Ids& pr = pen ? prompt : Ids{};
        const Ids& out = pen ? output : Ids{};
        tok = reuse ? s.sample(logits, c.p, pr, out, rng, scratch).token : s.sample(logits, c.p, pr, out, rng).token;
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(us.begin(), us.end());
      std::printf("  sample() %-48s %-13s median %6.0f us\n", c.name, reuse ? "reused buffers" : "fresh buffers",
                  us[us.size() / 2]);
      EXPECT_GE(tok, 0);
      EXPECT_LT(tok, static_cast<int32_t>(logits.size()));
    }
  }
  EXPECT_EQ(s.sample(logits, cases[4].p, {}, {}, rng).token, greedy);
}

}  // namespace
}  // namespace inferdesk
