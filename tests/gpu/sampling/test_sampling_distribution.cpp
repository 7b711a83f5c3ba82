// GPU sampler draws against Sampler::distribution() (core/sample): ~20k draws per setting (the
// same row in every batch row, the counter varying), Pearson chi-square goodness of fit, and every
// single draw checked to lie inside the filtered set (a token the CPU gives probability 0 must
// never be drawn).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/kernels/sampling.h"
#include "tests/gpu/sampling/sampling_harness.h"

namespace inferdesk::gputest {
namespace {

constexpr int64_t kDraws = 20000;

std::vector<int64_t> draw_counts(const std::vector<float>& row, const RowRequest& base, int32_t rows_per_call,
                                 int64_t draws) {
  const auto vocab = static_cast<int32_t>(row.size());
  std::vector<float> replicated;
  replicated.reserve(row.size() * static_cast<size_t>(rows_per_call));
  for (int32_t r = 0; r < rows_per_call; ++r) replicated.insert(replicated.end(), row.begin(), row.end());
  GpuBatch batch(replicated, rows_per_call, vocab);
  std::vector<int64_t> counts(row.size(), 0);
  std::vector<RowRequest> reqs(static_cast<size_t>(rows_per_call), base);
  for (int64_t done = 0; done < draws; done += rows_per_call) {
    for (int32_t r = 0; r < rows_per_call; ++r) {
      reqs[static_cast<size_t>(r)].counter = base.counter + static_cast<uint64_t>(done + r);
    }
    for (const RowResult& o : batch.run(reqs)) {
      if (o.token < 0 || o.token >= vocab) {
        throw std::runtime_error("drew token " + std::to_string(o.token) + " outside [0, " + std::to_string(vocab) +
                                 ")");
      }
      counts[static_cast<size_t>(o.token)]++;
    }
  }
  return counts;
}

// Draws `draws` (rounded up to whole calls) and checks them against the CPU's distribution.
void check_distribution(const std::vector<float>& row, const RowRequest& q, int32_t rows_per_call,
                        const std::string& what, int64_t draws = kDraws) {
  SCOPED_TRACE(what);
  const std::vector<float> dist = Sampler{}.distribution(row, q.params, q.prompt, q.output);
  const std::vector<int64_t> counts = draw_counts(row, q, rows_per_call, draws);
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  int outside = 0;
  for (size_t i = 0; i < dist.size(); ++i) {
    if (dist[i] == 0.0f && counts[i] > 0 && ++outside <= 5) {
      ADD_FAILURE() << "token " << i << " (logit " << row[i] << ") is outside the filtered set "
                    << "but was drawn " << counts[i] << " times";
    }
  }
  EXPECT_EQ(outside, 0) << "draws outside the filtered set";
  const ChiSquare chi = chi_square(counts, dist, n);
  if (!(chi.statistic < chi.critical)) {
    // The bins that contribute most, to see what went wrong.
    std::vector<std::pair<double, size_t>> worst;
    for (size_t i = 0; i < dist.size(); ++i) {
      const double e = static_cast<double>(dist[i]) * static_cast<double>(n);
      if (e >= 5.0) worst.push_back({(counts[i] - e) * (counts[i] - e) / e, i});
    }
    std::sort(worst.rbegin(), worst.rend());
    std::ostringstream os;
    for (size_t j = 0; j < std::min<size_t>(5, worst.size()); ++j) {
      const size_t i = worst[j].second;
      os << " token " << i << ": expected " << dist[i] * static_cast<double>(n) << " drawn " << counts[i] << ";";
    }
    ADD_FAILURE() << "chi-square " << chi.statistic << " >= " << chi.critical << " (dof " << chi.dof << ", " << n
                  << " draws);" << os.str();
  }
}

RowRequest with(float temperature, int32_t top_k = 0, float top_p = 1.0f, float min_p = 0.0f) {
  RowRequest q;
  q.params.temperature = temperature;
  q.params.top_k = top_k;
  q.params.top_p = top_p;
  q.params.min_p = min_p;
  q.seed = 0x5eed;
  return q;
}

size_t support_size(const std::vector<float>& row, const RowRequest& q) {
  const std::vector<float> d = Sampler{}.distribution(row, q.params, q.prompt, q.output);
  return static_cast<size_t>(std::count_if(d.begin(), d.end(), [](float p) { return p > 0.0f; }));
}

TEST(GpuSamplingDistribution, SmallVocabularyEverySetting) {
  INFERDESK_REQUIRE_GPU();
  const std::vector<float> row = normal_logits(50, 1.5f, 77);
  const int32_t rows = 256;  // the most rows one call takes
  check_distribution(row, with(0.8f), rows, "temperature 0.8");
  check_distribution(row, with(1.0f, 5), rows, "top_k 5");
  check_distribution(row, with(1.0f, 0, 0.8f), rows, "top_p 0.8");
  check_distribution(row, with(1.0f, 0, 1.0f, 0.1f), rows, "min_p 0.1");
  check_distribution(row, with(0.9f, 10, 0.9f, 0.05f), rows, "all combined");
  RowRequest pen = with(1.0f, 0, 0.95f);
  pen.params.repetition_penalty = 1.3f;
  pen.params.frequency_penalty = 0.4f;
  pen.params.presence_penalty = 0.6f;
  pen.prompt = {1, 2, 3, 10, 20, 2};
  pen.output = {2, 2, 5, 5, 5, 7, 1, 49};
  check_distribution(row, pen, rows, "penalties + top_p 0.95");
  RowRequest big = with(2.5f, 0, 1.0f);  // high temperature: near-uniform over 50
  big.seed = 1;
  check_distribution(row, big, rows, "temperature 2.5");
}

TEST(GpuSamplingDistribution, TopKKeepsEveryTieAtTheKthValue) {
  INFERDESK_REQUIRE_GPU();
  std::vector<float> row = normal_logits(50, 0.3f, 5, -2.0f);
  row[11] = 3.0f;
  row[30] = 2.0f;
  row[4] = row[17] = row[40] = 1.5f;  // k = 3 ends inside these three ties: all are kept
  const RowRequest q = with(1.0f, 3);
  ASSERT_EQ(support_size(row, q), 5u);
  check_distribution(row, q, 256, "top_k 3 with ties");
}

TEST(GpuSamplingDistribution, TopPKeepsOnlyTheLowestIdsOfTiesAtTheCut) {
  INFERDESK_REQUIRE_GPU();
  // p = 0.4 for id 9, 0.2 each for ids 44, 3, 21 (ties), a faint tail. With top_p 0.7 the sorted
  // cumulative mass (ties by lower id: 3, 21, 44) reaches the target at id 21: 44 is dropped.
  std::vector<float> row(50, std::log(0.2f) - 6.0f);
  row[9] = std::log(0.4f);
  row[44] = row[3] = row[21] = std::log(0.2f);
  const RowRequest q = with(1.0f, 0, 0.7f);
  const std::vector<float> d = Sampler{}.distribution(row, q.params, {}, {});
  ASSERT_GT(d[3], 0.0f);
  ASSERT_GT(d[21], 0.0f);
  ASSERT_EQ(d[44], 0.0f);
  ASSERT_EQ(support_size(row, q), 3u);
  check_distribution(row, q, 256, "top_p cut inside ties");
}

// 150k tokens: a normal background and 30 boosted tokens holding most of the mass.
std::vector<float> peaked_row(size_t vocab, uint64_t seed) {
  std::vector<float> row = normal_logits(vocab, 2.0f, seed);
  std::mt19937_64 g(seed + 1);
  std::uniform_int_distribution<size_t> pos(0, vocab - 1);
  std::normal_distribution<float> boost(14.0f, 1.0f);
  for (int k = 0; k < 30; ++k) row[pos(g)] = boost(g);
  return round_bf16(std::move(row));
}

TEST(GpuSamplingDistribution, LargePeakedVocabulary) {
  INFERDESK_REQUIRE_GPU();
  const std::vector<float> row = peaked_row(150001, 9);
  const int32_t rows = 128;
  check_distribution(row, with(1.0f), rows, "150k temperature 1");
  check_distribution(row, with(0.7f, 0, 0.9f), rows, "150k T 0.7 top_p 0.9");
  check_distribution(row, with(0.8f, 40, 0.95f), rows, "150k top_k 40 top_p 0.95 T 0.8");
  check_distribution(row, with(1.0f, 0, 1.0f, 0.02f), rows, "150k min_p 0.02");
  check_distribution(row, with(1.5f, 1000), rows, "150k top_k 1000 T 1.5");
  check_distribution(row, with(3.0f, 300, 0.99f), rows, "150k top_k 300 top_p 0.99 T 3");
  // Penalties on boosted tokens change which ones lead.
  RowRequest pen = with(1.0f, 0, 0.9f);
  pen.params.repetition_penalty = 1.15f;
  pen.params.frequency_penalty = 0.7f;
  pen.params.presence_penalty = 0.9f;
  std::vector<std::pair<float, int32_t>> best;
  for (size_t i = 0; i < row.size(); ++i) best.push_back({row[i], static_cast<int32_t>(i)});
  std::partial_sort(best.begin(), best.begin() + 10, best.end(), [](auto a, auto b) { return a.first > b.first; });
  for (int k = 0; k < 10; ++k) {
    (k % 2 ? pen.prompt : pen.output).push_back(best[static_cast<size_t>(k)].second);
    if (k < 3) pen.output.push_back(best[static_cast<size_t>(k)].second);  // repeated
  }
  check_distribution(row, pen, rows, "150k penalties top_p 0.9");
}

TEST(GpuSamplingDistribution, TopKAroundTheNumberOfChunks) {
  INFERDESK_REQUIRE_GPU();
  // 128,256 logits are 32 chunks of 4096: the top-k select takes its lower bound from the chunk
  // maxima for k <= 32 and from the threads' maxima for k = 33.
  const std::vector<float> row = peaked_row(128256, 12);
  const int32_t rows = 128;
  for (int32_t k : {1, 20, 32, 33}) {
    check_distribution(row, with(1.0f, k), rows, "128k top_k " + std::to_string(k), 10000);
  }
}

TEST(GpuSamplingDistribution, TopPCutInsideHundredsOfTies) {
  INFERDESK_REQUIRE_GPU();
  // One best token, 300 tied tokens spread over the row, a faint background. top_p is chosen so
  // that the cut falls half-way through a tie's mass after about 150 ties: the GPU must keep
  // exactly the lowest-id ~150 of them (found across the block's warp segments), as the CPU.
  const size_t vocab = 100003;
  std::vector<float> row = normal_logits(vocab, 0.5f, 31, -5.0f);
  std::mt19937_64 g(32);
  std::uniform_int_distribution<size_t> pos(0, vocab - 1);
  row[pos(g)] = 7.0f;
  int placed = 0;
  while (placed < 300) {
    const size_t i = pos(g);
    if (row[i] < 5.0f) {
      row[i] = 5.0f;
      ++placed;
    }
  }
  double total = 0.0;
  for (float x : row) total += std::exp(static_cast<double>(x) - 7.0);
  const double one = std::exp(-2.0);
  const double top_p = (1.0 + 150.5 * one) / total;  // the cut in the middle of the 151st tie
  const RowRequest q = with(1.0f, 0, static_cast<float>(top_p));
  ASSERT_EQ(support_size(row, q), 152u);  // the best token and 151 ties
  check_distribution(row, q, 128, "top_p inside 300 ties");
}

}  // namespace
}  // namespace inferdesk::gputest
