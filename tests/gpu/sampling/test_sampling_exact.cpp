// GPU sampler against the CPU Sampler where the answer is exact: greedy tokens (with ties, -inf
// entries, penalties), log-probabilities and top-N lists, odd sizes and unaligned rows, bad rows,
// determinism (same (seed, counter) -> same token whatever the batch), and the per-chunk row
// statistics (maxima at chunk borders, NaN in one chunk, the same bits alone or in a batch).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda/kernels/sampling.h"
#include "tests/gpu/sampling/sampling_harness.h"

namespace inferdesk::gputest {
namespace {

using Ids = std::vector<int32_t>;

// Log-prob tolerance: the GPU's log-normaliser sums float exp() values in a fixed order (<= ~500
// terms per thread, relative error < 3e-5 in the worst case, ~1e-6 typically); the CPU's
// polynomial exp is within 2e-7. Both are far below 1e-4; a wrong normaliser or a wrong token is
// off by far more.
constexpr double kLogprobTol = 1e-4;

SampleResult cpu_result(const float* row, int32_t vocab, const RowRequest& r) {
  SamplerRng rng(1);
  return Sampler{}.sample(std::span<const float>(row, static_cast<size_t>(vocab)), r.params, r.prompt, r.output, rng);
}

void expect_close_logprob(float got, double want, const std::string& what) {
  if (std::isinf(want)) {
    EXPECT_TRUE(std::isinf(got) && got < 0) << what << ": got " << got << ", want -inf";
  } else {
    EXPECT_NEAR(got, want, kLogprobTol) << what;
  }
}

// The log-probs the kernel reported for row `r` against the CPU: the chosen token's (whatever it
// is) and the top list (ids exactly: both sides break ties by lower id on the same raw values).
void expect_logprobs(const float* row, int32_t vocab, const RowRequest& req, const RowResult& got,
                     const std::string& what) {
  ASSERT_GE(got.token, 0) << what;
  ASSERT_LT(got.token, vocab) << what;
  const double log_z = log_normaliser(row, static_cast<size_t>(vocab));
  expect_close_logprob(got.logprob, static_cast<double>(row[got.token]) - log_z, what + ": chosen token's logprob");
  const SampleResult cpu = cpu_result(row, vocab, req);
  const size_t n = cpu.top.size();
  ASSERT_EQ(n, static_cast<size_t>(std::min(req.params.logprobs, vocab))) << what;
  for (size_t j = 0; j < n; ++j) {
    EXPECT_EQ(got.top_ids[j], cpu.top[j].id) << what << ": top entry " << j;
    expect_close_logprob(got.top_logprobs[j], cpu.top[j].logprob, what + ": top entry " + std::to_string(j));
  }
  for (size_t j = n; j < static_cast<size_t>(cuda::kMaxTopLogprobs); ++j) {
    EXPECT_EQ(got.top_ids[j], -1) << what << ": unused top entry " << j;
  }
}

Ids random_ids(size_t n, int32_t vocab, std::mt19937_64& g) {
  std::uniform_int_distribution<int32_t> d(0, vocab - 1);
  Ids v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Rows of several kinds: plain, maximum tied at several ids, -inf holes, one finite value.
std::vector<float> varied_rows(int32_t rows, int32_t vocab, uint64_t seed) {
  std::vector<float> all;
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int32_t> pos(0, vocab - 1);
  for (int32_t r = 0; r < rows; ++r) {
    std::vector<float> v = normal_logits(static_cast<size_t>(vocab), 3.0f, seed * 1000 + r);
    switch (r % 5) {
      case 1: {  // the maximum at several ids
        const float mx = *std::max_element(v.begin(), v.end());
        for (int k = 0; k < 3; ++k) v[static_cast<size_t>(pos(g))] = mx;
        break;
      }
      case 2: {  // -inf holes, including id 0 and the maximum
        for (auto& x : v)
          if (pos(g) % 10 == 0) x = -INFINITY;
        v[0] = -INFINITY;
        *std::max_element(v.begin(), v.end()) = -INFINITY;
        break;
      }
      case 3: {  // a single finite value
        const int32_t keep = pos(g);
        for (int32_t i = 0; i < vocab; ++i)
          if (i != keep) v[static_cast<size_t>(i)] = -INFINITY;
        break;
      }
      default: break;
    }
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// Greedy requests; every other one with penalties over a prompt and an output with repeats.
std::vector<RowRequest> greedy_requests(int32_t rows, int32_t vocab, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<RowRequest> reqs(static_cast<size_t>(rows));
  for (int32_t r = 0; r < rows; ++r) {
    RowRequest& q = reqs[static_cast<size_t>(r)];
    q.params.temperature = r % 3 == 0 ? 0.0f : 5e-6f;
    q.params.logprobs = r % 21;
    q.seed = g();
    q.counter = static_cast<uint64_t>(r);
    q.prompt = random_ids(30, vocab, g);
    q.output = random_ids(40, std::max(vocab / 50, 1), g);  // few distinct ids: repeats
    if (r % 2 == 1) {
      q.params.repetition_penalty = r % 4 == 1 ? 1.7f : 0.6f;
      q.params.frequency_penalty = 0.35f;
      q.params.presence_penalty = r % 4 == 1 ? 0.5f : -0.8f;
    }
  }
  return reqs;
}

void check_greedy(int32_t rows, int32_t vocab, int64_t stride, int64_t offset, uint64_t seed) {
  const std::vector<float> logits = varied_rows(rows, vocab, seed);
  const std::vector<RowRequest> reqs = greedy_requests(rows, vocab, seed + 7);
  GpuBatch batch(logits, rows, vocab, stride, offset);
  const std::vector<RowResult> got = batch.run(reqs);
  for (int32_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + static_cast<int64_t>(r) * vocab;
    const RowRequest& q = reqs[static_cast<size_t>(r)];
    const std::string what = "vocab " + std::to_string(vocab) + " stride " + std::to_string(stride) + " row " +
                             std::to_string(r);
    EXPECT_EQ(got[static_cast<size_t>(r)].token, cpu_result(row, vocab, q).token) << what;
    expect_logprobs(row, vocab, q, got[static_cast<size_t>(r)], what);
  }
}

TEST(GpuSampling, GreedyMatchesCpuOnVariedRows) {
  INFERDESK_REQUIRE_GPU();
  check_greedy(60, 1027, 1028, 0, 1);  // every row 16-byte aligned: vector loads
  check_greedy(60, 1027, 1027, 0, 2);  // odd stride: rows alternate between both paths
  check_greedy(40, 1027, 1031, 3, 3);  // no row aligned: scalar loads only
  check_greedy(33, 5, 5, 0, 4);        // fewer elements than threads or logprobs
  check_greedy(20, 40000, 40003, 1, 5);
}

TEST(GpuSampling, GreedyMatchesCpuOnLargeVocabularies) {
  INFERDESK_REQUIRE_GPU();
  check_greedy(6, 151936, 151936, 0, 11);
  check_greedy(6, 256000, 256001, 0, 12);
  check_greedy(3, 128257, 128257, 0, 13);
}

TEST(GpuSampling, TopLogprobsKeepLowestIdsAmongTies) {
  INFERDESK_REQUIRE_GPU();
  const int32_t vocab = 70001;
  std::vector<float> logits;
  // Row 0: all equal, so the list is ids 0..19 at -log(V).
  logits.insert(logits.end(), static_cast<size_t>(vocab), 0.25f);
  // Row 1: 45 ids share the best value, spread over the whole row; 3 ids share the second.
  std::vector<float> v(static_cast<size_t>(vocab), -1.0f);
  std::mt19937_64 g(3);
  std::uniform_int_distribution<int32_t> pos(0, vocab - 1);
  for (int k = 0; k < 45; ++k) v[static_cast<size_t>(pos(g))] = 2.0f;
  logits.insert(logits.end(), v.begin(), v.end());
  // Row 2: 12 distinct best values, then 30 ties at the 13th value: the list ends inside them.
  std::vector<float> w = normal_logits(static_cast<size_t>(vocab), 1.0f, 5);
  for (int k = 0; k < 12; ++k) w[static_cast<size_t>(pos(g))] = 10.0f + static_cast<float>(k);
  for (int k = 0; k < 30; ++k) w[static_cast<size_t>(pos(g))] = 9.0f;
  logits.insert(logits.end(), w.begin(), w.end());
  std::vector<RowRequest> reqs(3);
  for (auto& q : reqs) {
    q.params.temperature = 0.0f;
    q.params.logprobs = 20;
  }
  GpuBatch batch(logits, 3, vocab);
  const auto got = batch.run(reqs);
  for (int r = 0; r < 3; ++r) {
    expect_logprobs(logits.data() + static_cast<size_t>(r) * vocab, vocab, reqs[static_cast<size_t>(r)],
                    got[static_cast<size_t>(r)], "tie row " + std::to_string(r));
  }
  for (int j = 0; j < 20; ++j) {
    EXPECT_EQ(got[0].top_ids[static_cast<size_t>(j)], j);
    EXPECT_NEAR(got[0].top_logprobs[static_cast<size_t>(j)], -std::log(double(vocab)), 1e-4);
  }
}

TEST(GpuSampling, TinyVocabularies) {
  INFERDESK_REQUIRE_GPU();
  // Vocab 1: the only token, log-prob 0; the list has one entry.
  {
    std::vector<RowRequest> reqs(2);
    reqs[0].params.temperature = 0.0f;
    reqs[0].params.logprobs = 20;
    reqs[1].params.temperature = 1.0f;
    reqs[1].params.top_k = 5;
    reqs[1].params.top_p = 0.5f;
    reqs[1].params.logprobs = 3;
    GpuBatch batch({-3.0f, 4.0f}, 2, 1);
    const auto got = batch.run(reqs);
    for (const auto& o : got) {
      EXPECT_EQ(o.token, 0);
      EXPECT_NEAR(o.logprob, 0.0f, 1e-6);
      EXPECT_EQ(o.top_ids[0], 0);
      EXPECT_EQ(o.top_ids[1], -1);
    }
  }
  // Vocab 7 with 20 log-probs asked: 7 entries, then -1.
  const std::vector<float> row = {0.5f, -1.0f, 2.0f, 2.0f, -INFINITY, 0.0f, -0.0f};
  RowRequest q;
  q.params.temperature = 0.0f;
  q.params.logprobs = 20;
  GpuBatch batch(row, 1, 7);
  const auto got = batch.run({q});
  EXPECT_EQ(got[0].token, 2);
  expect_logprobs(row.data(), 7, q, got[0], "vocab 7");
}

TEST(GpuSampling, BadRowsGiveMinusOneAndLeaveOthersAlone) {
  INFERDESK_REQUIRE_GPU();
  const int32_t vocab = 3001;
  std::vector<float> logits;
  for (int r = 0; r < 4; ++r) {
    std::vector<float> v = normal_logits(static_cast<size_t>(vocab), 2.0f, 40 + r);
    if (r == 0) v[1234] = NAN;
    if (r == 1) std::fill(v.begin(), v.end(), -INFINITY);
    if (r == 2) v[7] = INFINITY;
    logits.insert(logits.end(), v.begin(), v.end());
  }
  std::vector<RowRequest> reqs(4);
  for (int r = 0; r < 4; ++r) {
    reqs[static_cast<size_t>(r)].params.temperature = r % 2 == 0 ? 0.0f : 0.8f;
    reqs[static_cast<size_t>(r)].params.top_p = 0.9f;
    reqs[static_cast<size_t>(r)].params.logprobs = 4;
  }
  GpuBatch batch(logits, 4, vocab);
  const auto got = batch.run(reqs);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(got[static_cast<size_t>(r)].token, -1) << "bad row " << r;
    EXPECT_TRUE(std::isnan(got[static_cast<size_t>(r)].logprob)) << "bad row " << r;
    EXPECT_EQ(got[static_cast<size_t>(r)].top_ids[0], -1) << "bad row " << r;
  }
  const float* good = logits.data() + 3 * static_cast<size_t>(vocab);
  const std::vector<float> dist = Sampler{}.distribution(std::span<const float>(good, vocab), reqs[3].params, {}, {});
  ASSERT_GE(got[3].token, 0);
  EXPECT_GT(dist[static_cast<size_t>(got[3].token)], 0.0f);
  expect_logprobs(good, vocab, reqs[3], got[3], "good row");
}

// A mix of requests of every kind over distinct rows.
std::vector<RowRequest> mixed_requests(int32_t n, int32_t vocab, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<RowRequest> reqs(static_cast<size_t>(n));
  for (int32_t r = 0; r < n; ++r) {
    RowRequest& q = reqs[static_cast<size_t>(r)];
    q.seed = g();
    q.counter = g() % 1000;
    q.params.logprobs = static_cast<int32_t>(g() % 6);
    switch (r % 6) {
      case 0: q.params.temperature = 0.0f; break;
      case 1: q.params.temperature = 0.7f; break;
      case 2:
        q.params.temperature = 1.0f;
        q.params.top_k = 40;
        q.params.top_p = 0.9f;
        break;
      case 3:
        q.params.temperature = 1.3f;
        q.params.min_p = 0.05f;
        break;
      case 4:
        q.params.temperature = 0.9f;
        q.params.top_p = 0.6f;
        break;
      default:
        q.params.temperature = 1.0f;
        q.params.repetition_penalty = 1.2f;
        q.params.frequency_penalty = 0.5f;
        q.params.presence_penalty = 0.3f;
        q.params.top_k = 700;
        break;
    }
    q.prompt = random_ids(20, vocab, g);
    q.output = random_ids(25, 40, g);
  }
  return reqs;
}

TEST(GpuSampling, SameSeedAndCounterGiveTheSameTokenInAnyBatch) {
  INFERDESK_REQUIRE_GPU();
  const int32_t vocab = 50257, n = 36, extra = 20;
  const std::vector<float> logits = varied_rows(n, vocab, 21);
  const std::vector<RowRequest> reqs = mixed_requests(n, vocab, 22);
  GpuBatch alone(logits, n, vocab);
  const auto first = alone.run(reqs);
  const auto again = alone.run(reqs);
  // The same requests reversed, interleaved with other rows and requests.
  const std::vector<float> other = varied_rows(extra, vocab, 23);
  const std::vector<RowRequest> other_reqs = mixed_requests(extra, vocab, 24);
  std::vector<float> mixed_logits;
  std::vector<RowRequest> mixed;
  std::vector<int32_t> where(static_cast<size_t>(n));
  // Build the order explicitly: mine reversed, one foreign row after every second of mine.
  int32_t f = 0;
  for (int32_t r = n - 1; r >= 0; --r) {
    where[static_cast<size_t>(r)] = static_cast<int32_t>(mixed.size());
    mixed.push_back(reqs[static_cast<size_t>(r)]);
    mixed_logits.insert(mixed_logits.end(), logits.begin() + static_cast<int64_t>(r) * vocab,
                        logits.begin() + static_cast<int64_t>(r + 1) * vocab);
    if (r % 2 == 0 && f < extra) {
      mixed.push_back(other_reqs[static_cast<size_t>(f)]);
      mixed_logits.insert(mixed_logits.end(), other.begin() + static_cast<int64_t>(f) * vocab,
                          other.begin() + static_cast<int64_t>(f + 1) * vocab);
      ++f;
    }
  }
  GpuBatch together(mixed_logits, static_cast<int32_t>(mixed.size()), vocab);
  const auto second = together.run(mixed);
  for (int32_t r = 0; r < n; ++r) {
    const RowResult& a = first[static_cast<size_t>(r)];
    const RowResult& b = again[static_cast<size_t>(r)];
    const RowResult& c = second[static_cast<size_t>(where[static_cast<size_t>(r)])];
    EXPECT_EQ(a.token, b.token) << "row " << r << " rerun";
    EXPECT_EQ(a.token, c.token) << "row " << r << " in another batch";
    EXPECT_EQ(a.logprob, c.logprob) << "row " << r;
    EXPECT_EQ(a.top_ids, c.top_ids) << "row " << r;
    EXPECT_EQ(a.top_logprobs, c.top_logprobs) << "row " << r;
    // And each row is right: in the CPU's support, log-probs as the CPU's.
    const float* row = logits.data() + static_cast<int64_t>(r) * vocab;
    const RowRequest& q = reqs[static_cast<size_t>(r)];
    ASSERT_GE(a.token, 0) << "row " << r;
    const std::vector<float> dist = Sampler{}.distribution(std::span<const float>(row, static_cast<size_t>(vocab)),
                                                           q.params, q.prompt, q.output);
    EXPECT_GT(dist[static_cast<size_t>(a.token)], 0.0f) << "row " << r << " drew " << a.token;
    if (q.params.is_greedy()) {
      EXPECT_EQ(a.token, cpu_result(row, vocab, q).token) << "row " << r;
    }
    expect_logprobs(row, vocab, q, a, "mixed row " + std::to_string(r));
  }
}

TEST(GpuSampling, DrawsDependOnSeedAndCounter) {
  INFERDESK_REQUIRE_GPU();
  const int32_t vocab = 64, rows = 128;
  std::vector<float> logits(static_cast<size_t>(rows * vocab), 0.0f);  // uniform rows
  std::vector<RowRequest> reqs(static_cast<size_t>(rows));
  for (int32_t r = 0; r < rows; ++r) {
    reqs[static_cast<size_t>(r)].seed = r < 64 ? 99 : 100 + static_cast<uint64_t>(r);
    reqs[static_cast<size_t>(r)].counter = r < 64 ? static_cast<uint64_t>(r) : 5;
  }
  GpuBatch batch(logits, rows, vocab);
  const auto got = batch.run(reqs);
  std::vector<int32_t> by_counter, by_seed;
  for (int32_t r = 0; r < rows; ++r) {
    ASSERT_GE(got[static_cast<size_t>(r)].token, 0);
    ASSERT_LT(got[static_cast<size_t>(r)].token, vocab);
    (r < 64 ? by_counter : by_seed).push_back(got[static_cast<size_t>(r)].token);
  }
  auto distinct = [](Ids v) {
    std::sort(v.begin(), v.end());
    return std::unique(v.begin(), v.end()) - v.begin();
  };
  // 64 uniform draws over 64 tokens: about 40 distinct values; all equal would mean the draw
  // ignores the counter (or the seed).
  EXPECT_GT(distinct(by_counter), 20);
  EXPECT_GT(distinct(by_seed), 20);
}

// ------------------------------------------------------------ per-chunk row statistics
// sample_rows first cuts every row into chunks of kChunk logits (one block each), then merges the
// chunks' maxima, log-sum-exp states and NaN flags per row in a fixed order.

constexpr int32_t kChunk = 4096;  // sampling_block.cuh's kChunk: the borders the tests aim at

RowRequest plain_greedy(int32_t logprobs = 0) {
  RowRequest q;
  q.params.temperature = 0.0f;
  q.params.logprobs = logprobs;
  return q;
}

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

// Greedy without penalties (the path that ends right after the chunk merge) on varied rows: the
// CPU's token and log-prob, with `logprobs` top entries.
void check_plain_greedy(int32_t rows, int32_t vocab, int64_t stride, int64_t offset, uint64_t seed,
                        int32_t logprobs = 0) {
  const std::vector<float> logits = varied_rows(rows, vocab, seed);
  const std::vector<RowRequest> reqs(static_cast<size_t>(rows), plain_greedy(logprobs));
  GpuBatch batch(logits, rows, vocab, stride, offset);
  const std::vector<RowResult> got = batch.run(reqs);
  for (int32_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + static_cast<int64_t>(r) * vocab;
    const std::string what = "plain greedy, vocab " + std::to_string(vocab) + " stride " + std::to_string(stride) +
                             " offset " + std::to_string(offset) + " row " + std::to_string(r);
    const RowRequest& q = reqs[static_cast<size_t>(r)];
    EXPECT_EQ(got[static_cast<size_t>(r)].token, cpu_result(row, vocab, q).token) << what;
    expect_logprobs(row, vocab, q, got[static_cast<size_t>(r)], what);
  }
}

TEST(GpuSamplingChunks, GreedyFindsTheMaximumInAnyChunkLowestIdOnTies) {
  INFERDESK_REQUIRE_GPU();
  const int32_t vocab = 128256;  // 31 full chunks and a last one of 1280
  const int32_t last = 31 * kChunk;
  struct Case {
    std::vector<int32_t> at;  // ids that get the row's maximum
    int32_t want;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{0}, 0, "id 0"},
      {{5}, 5, "first chunk"},
      {{vocab - 1}, vocab - 1, "last id (last, partial chunk)"},
      {{last + 17}, last + 17, "last chunk"},
      {{kChunk - 1}, kChunk - 1, "last id of the first chunk"},
      {{kChunk}, kChunk, "first id of the second chunk"},
      {{kChunk, kChunk - 1}, kChunk - 1, "tie across the first border"},
      {{last, last - 1}, last - 1, "tie across the last border"},
      {{vocab - 1, 3 * kChunk + 2, 2 * kChunk}, 2 * kChunk, "tie over three chunks"},
      {{vocab - 1, 77}, 77, "tie between the first and the last chunk"},
      {{20 * kChunk + 3, 20 * kChunk + 2, 20 * kChunk + 1}, 20 * kChunk + 1, "ties in one chunk"},
  };
  const auto rows = static_cast<int32_t>(cases.size()) + 2;
  std::vector<float> logits;
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<float> v = normal_logits(static_cast<size_t>(vocab), 2.0f, 100 + c);
    for (int32_t id : cases[c].at) v[static_cast<size_t>(id)] = 50.0f;
    logits.insert(logits.end(), v.begin(), v.end());
  }
  // All equal: id 0. All -inf but one finite value in the last chunk: that id.
  logits.insert(logits.end(), static_cast<size_t>(vocab), -1.5f);
  std::vector<float> lone(static_cast<size_t>(vocab), -INFINITY);
  lone[static_cast<size_t>(vocab - 3)] = -200.0f;
  logits.insert(logits.end(), lone.begin(), lone.end());
  std::vector<int32_t> want;
  for (const Case& c : cases) want.push_back(c.want);
  want.push_back(0);
  want.push_back(vocab - 3);

  for (int32_t logprobs : {0, 20}) {
    const std::vector<RowRequest> reqs(static_cast<size_t>(rows), plain_greedy(logprobs));
    GpuBatch batch(logits, rows, vocab);
    const std::vector<RowResult> got = batch.run(reqs);
    for (int32_t r = 0; r < rows; ++r) {
      const std::string what = std::string(r < static_cast<int32_t>(cases.size()) ? cases[static_cast<size_t>(r)].what
                                                                                  : "special row") +
                               " (row " + std::to_string(r) + ", logprobs " + std::to_string(logprobs) + ")";
      const float* row = logits.data() + static_cast<int64_t>(r) * vocab;
      const RowRequest& q = reqs[static_cast<size_t>(r)];
      EXPECT_EQ(got[static_cast<size_t>(r)].token, want[static_cast<size_t>(r)]) << what;
      EXPECT_EQ(got[static_cast<size_t>(r)].token, cpu_result(row, vocab, q).token) << what;
      expect_logprobs(row, vocab, q, got[static_cast<size_t>(r)], what);
      // Alone in its batch: the same token and the same bits.
      GpuBatch one(std::vector<float>(row, row + vocab), 1, vocab);
      const RowResult alone = one.run({q})[0];
      EXPECT_EQ(alone.token, got[static_cast<size_t>(r)].token) << what << " alone";
      EXPECT_EQ(bits(alone.logprob), bits(got[static_cast<size_t>(r)].logprob)) << what << " alone";
    }
  }
}

TEST(GpuSamplingChunks, VocabulariesNotAMultipleOfTheChunkOrOfFour) {
  INFERDESK_REQUIRE_GPU();
  const std::vector<int32_t> vocabs = {151936, 1001, 7, kChunk - 1, kChunk, kChunk + 1, 2 * kChunk + 3, 128257};
  uint64_t seed = 200;
  for (int32_t v : vocabs) {
    check_plain_greedy(10, v, v, 0, ++seed);
    check_plain_greedy(10, v, v, 0, ++seed, 7);
    check_greedy(10, v, v, 0, ++seed);  // penalties and top log-probs mixed in
  }
}

TEST(GpuSamplingChunks, StridedAndUnalignedRows) {
  INFERDESK_REQUIRE_GPU();
  check_plain_greedy(8, 128256, 128257, 1, 301);      // odd stride, offset 1: alignment alternates
  check_plain_greedy(5, 151936, 151941, 3, 302, 20);  // no row 16-byte aligned
  check_plain_greedy(6, 128256, 131072, 0, 303);      // stride > vocab, every row aligned
  check_greedy(8, 128256, 128257, 1, 304);
  check_greedy(7, 1001, 1003, 2, 305);
}

TEST(GpuSamplingChunks, NanInOneChunkOnlyMarksOnlyThatRowBad) {
  INFERDESK_REQUIRE_GPU();
  const int32_t vocab = 128256;
  // Rows 0, 1, 2, 4: one NaN (first chunk, a middle chunk, the last id, the last id of the first
  // chunk with the maximum elsewhere); rows 3 and 5 are good.
  const std::vector<int32_t> nan_at = {0, 17 * kChunk + 5, vocab - 1, -1, kChunk - 1, -1};
  const auto rows = static_cast<int32_t>(nan_at.size());
  std::vector<float> logits;
  for (int32_t r = 0; r < rows; ++r) {
    std::vector<float> v = normal_logits(static_cast<size_t>(vocab), 2.0f, 400 + r);
    if (nan_at[static_cast<size_t>(r)] >= 0) v[static_cast<size_t>(nan_at[static_cast<size_t>(r)])] = NAN;
    if (r == 4) v[9 * kChunk] = 40.0f;
    logits.insert(logits.end(), v.begin(), v.end());
  }
  // Every kind of request on the bad rows: plain greedy, greedy with top log-probs, sampled with
  // top-p, penalised greedy.
  std::vector<RowRequest> kinds(4);
  kinds[0] = plain_greedy();
  kinds[1] = plain_greedy(5);
  kinds[2].params.temperature = 0.8f;
  kinds[2].params.top_p = 0.9f;
  kinds[2].params.logprobs = 3;
  kinds[2].seed = 9;
  kinds[3] = plain_greedy(2);
  kinds[3].params.repetition_penalty = 1.3f;
  kinds[3].params.presence_penalty = 0.4f;
  kinds[3].prompt = {1, 2, 3, vocab - 2};
  kinds[3].output = {2, 2, 9};
  for (size_t k = 0; k < kinds.size(); ++k) {
    const std::vector<RowRequest> reqs(static_cast<size_t>(rows), kinds[k]);
    GpuBatch batch(logits, rows, vocab);
    const std::vector<RowResult> got = batch.run(reqs);
    for (int32_t r = 0; r < rows; ++r) {
      const std::string what = "request kind " + std::to_string(k) + " row " + std::to_string(r);
      const RowResult& o = got[static_cast<size_t>(r)];
      if (nan_at[static_cast<size_t>(r)] >= 0) {
        EXPECT_EQ(o.token, -1) << what;
        EXPECT_TRUE(std::isnan(o.logprob)) << what;
        EXPECT_EQ(o.top_ids[0], -1) << what;
        continue;
      }
      const float* row = logits.data() + static_cast<int64_t>(r) * vocab;
      const RowRequest& q = reqs[static_cast<size_t>(r)];
      ASSERT_GE(o.token, 0) << what;
      if (q.params.is_greedy()) {
        EXPECT_EQ(o.token, cpu_result(row, vocab, q).token) << what;
      } else {
        const std::vector<float> dist = Sampler{}.distribution(std::span<const float>(row, static_cast<size_t>(vocab)),
                                                               q.params, q.prompt, q.output);
        EXPECT_GT(dist[static_cast<size_t>(o.token)], 0.0f) << what;
      }
      expect_logprobs(row, vocab, q, o, what);
    }
  }
}

// Batch invariance: 64 rows of every kind of request give the same tokens and bit-identical
// log-probs alone (batches of 1), together, and together at an odd stride and offset (the rows
// then alternate between vector and scalar loads of the same ids).
TEST(GpuSamplingChunks, RowsGiveTheSameBitsAloneAndInABatchOf64) {
  INFERDESK_REQUIRE_GPU();
  const int32_t vocab = 128256, n = 64;
  const std::vector<float> logits = varied_rows(n, vocab, 501);
  std::vector<RowRequest> reqs = mixed_requests(n, vocab, 502);
  for (int32_t r = 0; r < n; r += 6) reqs[static_cast<size_t>(r)].params.logprobs = 0;  // plain greedy
  reqs[1].params.logprobs = 20;  // top log-probs from the chunk maxima (32 chunks >= 20)
  GpuBatch together(logits, n, vocab);
  const std::vector<RowResult> all = together.run(reqs);
  GpuBatch shifted(logits, n, vocab, vocab + 1, 1);
  const std::vector<RowResult> moved = shifted.run(reqs);
  for (int32_t r = 0; r < n; ++r) {
    const float* row = logits.data() + static_cast<int64_t>(r) * vocab;
    GpuBatch one(std::vector<float>(row, row + vocab), 1, vocab);
    const RowResult alone = one.run({reqs[static_cast<size_t>(r)]})[0];
    const RowResult& a = all[static_cast<size_t>(r)];
    const RowResult& m = moved[static_cast<size_t>(r)];
    const std::string what = "row " + std::to_string(r);
    ASSERT_GE(a.token, 0) << what;
    EXPECT_EQ(alone.token, a.token) << what << " alone";
    EXPECT_EQ(m.token, a.token) << what << " shifted";
    EXPECT_EQ(bits(alone.logprob), bits(a.logprob)) << what << " alone";
    EXPECT_EQ(bits(m.logprob), bits(a.logprob)) << what << " shifted";
    EXPECT_EQ(alone.top_ids, a.top_ids) << what << " alone";
    EXPECT_EQ(m.top_ids, a.top_ids) << what << " shifted";
    for (size_t j = 0; j < a.top_logprobs.size(); ++j) {
      EXPECT_EQ(bits(alone.top_logprobs[j]), bits(a.top_logprobs[j])) << what << " alone " << j;
      EXPECT_EQ(bits(m.top_logprobs[j]), bits(a.top_logprobs[j])) << what << " shifted " << j;
    }
    const RowRequest& q = reqs[static_cast<size_t>(r)];
    if (q.params.is_greedy()) {
      EXPECT_EQ(a.token, cpu_result(row, vocab, q).token) << what;
    }
    expect_logprobs(row, vocab, q, a, what);
  }
}

// A padded vocabulary (config vocab_size 512 over a 480-token tokenizer): the engine samples a
// column view of the logits (vocab 480, row stride 512) whose hidden columns hold the largest
// logits of the row. The kernel never returns them, and greedy tokens and log-probabilities equal
// the CPU Sampler limited to 480 ids on the full rows; sampled draws stay below 480.
TEST(GpuSampling, PaddedVocabularyColumnsAreNeverSampled) {
  INFERDESK_REQUIRE_GPU();
  constexpr int32_t kRows = 16, kVocab = 480, kWidth = 512;
  constexpr float kPaddedLogit = 1e4f;  // would win every draw if the kernel read it
  const std::vector<float> logits = normal_logits(static_cast<size_t>(kRows) * kVocab, 2.0f, 77);
  GpuBatch batch(logits, kRows, kVocab, kWidth, 0, kPaddedLogit);
  std::vector<float> full(static_cast<size_t>(kWidth), kPaddedLogit);
  std::vector<RowRequest> reqs(static_cast<size_t>(kRows));
  for (int32_t r = 0; r < kRows; ++r) {
    RowRequest& q = reqs[static_cast<size_t>(r)];
    q.params.temperature = r % 2 == 0 ? 0.0f : 1.0f;  // greedy and sampled rows
    q.params.logprobs = 5;
    q.seed = 900 + static_cast<uint64_t>(r);
    if (r % 4 == 3) {  // a penalty on a padded id (a valid model id) and on a real one
      q.params.repetition_penalty = 1.3f;
      q.output = {kVocab + 7, 3};
    }
  }
  // The backend (cuda_sample.cpp) leaves padded ids out of the penalty entries; the CPU sampler
  // gets them and skips them itself.
  std::vector<RowRequest> device_reqs = reqs;
  for (RowRequest& q : device_reqs)
    q.output.erase(std::remove_if(q.output.begin(), q.output.end(), [](int32_t id) { return id >= kVocab; }),
                   q.output.end());
  const std::vector<RowResult> got = batch.run(device_reqs);
  const Sampler limited(kVocab);
  for (int32_t r = 0; r < kRows; ++r) {
    const RowRequest& q = reqs[static_cast<size_t>(r)];
    const RowResult& g = got[static_cast<size_t>(r)];
    const std::string what = "row " + std::to_string(r);
    ASSERT_GE(g.token, 0) << what;
    ASSERT_LT(g.token, kVocab) << what;
    std::copy_n(logits.begin() + static_cast<int64_t>(r) * kVocab, kVocab, full.begin());
    SamplerRng rng(1);
    const SampleResult cpu = limited.sample(full, q.params, q.prompt, q.output, rng);
    if (q.params.is_greedy()) {
      EXPECT_EQ(g.token, cpu.token) << what;
    }
    const double log_z = log_normaliser(full.data(), static_cast<size_t>(kVocab));
    expect_close_logprob(g.logprob, static_cast<double>(full[static_cast<size_t>(g.token)]) - log_z, what);
    for (size_t j = 0; j < cpu.top.size(); ++j) {
      EXPECT_EQ(g.top_ids[j], cpu.top[j].id) << what << " top " << j;
      EXPECT_LT(g.top_ids[j], kVocab) << what << " top " << j;
      expect_close_logprob(g.top_logprobs[j], cpu.top[j].logprob, what + " top " + std::to_string(j));
    }
  }
}

}  // namespace
}  // namespace inferdesk::gputest
