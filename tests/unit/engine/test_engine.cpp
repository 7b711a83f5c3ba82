// Engine behaviour on the CPU backend with the golden fixture models: batch invariance with
// chunked prefill, prefix-cache hits and preemption giving the same tokens as a cold run,
// cancellation, and request validation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <thread>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "core/util/error.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

Engine make_engine(const std::string& name, EngineOptions opts) {
  return Engine(load_model_folder(test::golden_models_dir() / name, make_cpu_backend()), opts);
}

Request greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

std::vector<Request> random_requests(int n, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_int_distribution<int32_t> tok(3, 500), len(1, 90);
  std::vector<Request> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p(static_cast<size_t>(len(rng)));
    for (auto& t : p) t = tok(rng);
    out.push_back(greedy(std::move(p), 12));
  }
  return out;
}

std::vector<std::vector<int32_t>> run_alone(Engine& e, const std::vector<Request>& reqs) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& r : reqs) out.push_back(generate_all(e, {r})[0].token_ids());
  return out;
}

class BatchInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchInvariance, SixteenMixedRequestsWithChunkedPrefillMatchAlone) {
  const auto reqs = random_requests(16, 7);
  EngineOptions alone_opts;
  alone_opts.num_kv_blocks = 256;
  Engine alone = make_engine(GetParam(), alone_opts);
  const auto expected = run_alone(alone, reqs);

  EngineOptions opts;
  opts.num_kv_blocks = 256;
  opts.scheduler.max_num_batched_tokens = 48;  // forces prompts to be split across steps
  opts.scheduler.max_num_seqs = 16;
  Engine batched = make_engine(GetParam(), opts);
  const auto results = generate_all(batched, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(results[i].token_ids(), expected[i]) << "request " << i;
  EXPECT_GT(batched.stats().steps, 16u);
}

INSTANTIATE_TEST_SUITE_P(DenseAndMoe, BatchInvariance, ::testing::Values("qwen2", "mistral", "mixtral", "qwen2_moe"),
                         [](const auto& info) { return info.param; });

TEST(PrefixCache, HitGivesSameTokensAsColdRun) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> tok(3, 500);
  std::vector<int32_t> prefix(150);
  for (auto& t : prefix) t = tok(rng);
  auto shared_a = prefix, shared_b = prefix;
  shared_b.resize(100);
  for (int i = 0; i < 30; ++i) shared_b.push_back(tok(rng));

  EngineOptions cold_opts;
  cold_opts.num_kv_blocks = 128;
  cold_opts.enable_prefix_caching = false;
  Engine cold = make_engine("llama", cold_opts);
  const auto want_a = generate_all(cold, {greedy(shared_a, 10)})[0].token_ids();
  const auto want_b = generate_all(cold, {greedy(shared_b, 10)})[0].token_ids();

  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine warm = make_engine("llama", opts);
  EXPECT_EQ(generate_all(warm, {greedy(shared_a, 10)})[0].token_ids(), want_a);
  EXPECT_EQ(warm.stats().prefix_cache_hit_rate, 0.0);
  EXPECT_EQ(generate_all(warm, {greedy(shared_a, 10)})[0].token_ids(), want_a);
  EXPECT_GT(warm.stats().prefix_cache_hit_rate, 0.0);
  EXPECT_EQ(generate_all(warm, {greedy(shared_b, 10)})[0].token_ids(), want_b);
}

TEST(Preemption, PreemptedSequencesResumeWithTheSameTokens) {
  const auto reqs = random_requests(6, 11);
  std::vector<Request> longer;
  for (auto r : reqs) {
    r.params.max_tokens = 40;
    longer.push_back(r);
  }
  EngineOptions big;
  big.num_kv_blocks = 256;
  Engine alone = make_engine("qwen3", big);
  const auto expected = run_alone(alone, longer);

  EngineOptions small;
  small.num_kv_blocks = 14;  // 6 sequences of up to 130 tokens need far more
  small.enable_prefix_caching = false;
  Engine tight = make_engine("qwen3", small);
  const auto results = generate_all(tight, longer);
  for (size_t i = 0; i < longer.size(); ++i) {
    EXPECT_EQ(results[i].reason, FinishReason::Length) << results[i].error;
    EXPECT_EQ(results[i].token_ids(), expected[i]) << "request " << i;
  }
  EXPECT_GT(tight.stats().preemptions, 0u);
  EXPECT_EQ(tight.stats().kv_blocks_used, 0);
}

TEST(Cancel, StopsARunningRequestAndTheEngineGoesOn) {
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine e = make_engine("qwen2", opts);
  std::promise<FinishReason> done;
  std::atomic<int> tokens{0};
  std::atomic<int64_t> id{0};
  std::atomic<bool> cancelled{false};
  Request r = greedy({5, 6, 7, 8}, 400);
  id = e.submit(r, [&](const StreamEvent& ev) {
    tokens += static_cast<int>(ev.tokens.size());
    if (!cancelled.exchange(true)) e.cancel(ev.request_id);
    if (ev.finished) done.set_value(ev.reason);
  });
  auto fut = done.get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(fut.get(), FinishReason::Cancelled);
  EXPECT_LT(tokens.load(), 400);
  const auto after = generate_all(e, {greedy({9, 10, 11}, 5)});
  EXPECT_EQ(after[0].tokens.size(), 5u);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(Submit, RejectsInvalidRequestsWithTypedErrors) {
  EngineOptions opts;
  opts.num_kv_blocks = 16;
  Engine e = make_engine("qwen2", opts);
  auto expect_invalid = [&](Request r) {
    try {
      e.submit(r, [](const StreamEvent&) {});
      ADD_FAILURE() << "accepted an invalid request";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ErrorCode::InvalidArgument) << err.what();
    }
  };
  Request bad = greedy({1, 2, 3}, 4);
  bad.params.temperature = -1;
  expect_invalid(bad);
  expect_invalid(greedy({1, 2, 512}, 4));  // vocab is 512
  expect_invalid(greedy({}, 4));
  bad = greedy({1, 2, 3}, 4);
  bad.params.top_p = 0;
  expect_invalid(bad);
}

// generate_all queues its requests together (Engine::submit_batch): the engine thread takes all of
// them into the first step, however slowly the caller would have submitted one by one, so runs of
// the same requests execute the same steps (the GPU tests compare such runs token for token).
TEST(Submit, BatchGoesIntoTheSameSteps) {
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine e = make_engine("qwen2", opts);
  for (int run = 0; run < 3; ++run) {
    const uint64_t before = e.stats().steps;
    std::vector<Request> reqs;
    for (int i = 0; i < 8; ++i) reqs.push_back(greedy({3, 4, 5, int32_t(6 + i), 7}, 6));
    const auto results = generate_all(e, reqs);
    for (const auto& r : results) ASSERT_EQ(r.reason, FinishReason::Length) << r.error;
    // One step prefills all 8 prompts (and samples their first tokens), five more decode them.
    EXPECT_EQ(e.stats().steps - before, 6u) << "run " << run;
  }
}

TEST(Submit, BatchWithABadRequestQueuesNothing) {
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine e = make_engine("qwen2", opts);
  std::vector<Request> reqs = {greedy({1, 2, 3}, 3), greedy({1, 2, 512}, 3), greedy({4, 5}, 3)};
  std::vector<StreamCallback> cbs(3, [](const StreamEvent&) { ADD_FAILURE() << "a request ran"; });
  try {
    e.submit_batch(reqs, cbs);
    ADD_FAILURE() << "accepted a batch with an invalid request";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::InvalidArgument) << err.what();
  }
  EXPECT_THROW(e.submit_batch(reqs, std::vector<StreamCallback>(2)), Error);  // sizes differ
  // generate_all then submits one by one: the bad request fails alone.
  const auto results = generate_all(e, reqs);
  EXPECT_EQ(results[0].reason, FinishReason::Length);
  EXPECT_EQ(results[1].reason, FinishReason::Error);
  EXPECT_NE(results[1].error.find("vocabulary"), std::string::npos) << results[1].error;
  EXPECT_EQ(results[2].reason, FinishReason::Length);
  EXPECT_EQ(results[0].tokens.size(), 3u);
}

TEST(Stop, StopTokenEndsGenerationWithReasonStop) {
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine e = make_engine("mistral", opts);
  const auto first = generate_all(e, {greedy({20, 30, 40}, 8)})[0];
  ASSERT_GE(first.tokens.size(), 3u);
  Request r = greedy({20, 30, 40}, 8);
  r.params.stop_token_ids = {first.tokens[2].id};
  const auto stopped = generate_all(e, {r})[0];
  EXPECT_EQ(stopped.reason, FinishReason::Stop);
  // Stops at the first occurrence of that token (it may occur earlier than index 2).
  EXPECT_LE(stopped.tokens.size(), 3u);
  EXPECT_EQ(stopped.tokens.back().id, first.tokens[2].id);
}

}  // namespace
}  // namespace inferdesk

namespace inferdesk {
namespace {

TEST(ExpertStats, CountsEveryRoutedToken) {
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine e = make_engine("qwen2_moe", opts);  // 3 layers, layer 1 dense, 8 experts, top-2
  const auto r = generate_all(e, {greedy({5, 6, 7, 8, 9}, 6)})[0];
  ASSERT_EQ(r.tokens.size(), 6u);
  const EngineStats s = e.stats();
  ASSERT_EQ(s.num_layers, 3);
  ASSERT_EQ(s.num_experts, 8);
  ASSERT_EQ(s.expert_counts.size(), 24u);
  // Tokens run through the model: 5 prompt + 5 fed-back outputs = 10; each routed to 2 experts.
  for (int layer = 0; layer < 3; ++layer) {
    int64_t sum = 0;
    for (int x = 0; x < 8; ++x) sum += s.expert_counts[static_cast<size_t>(layer * 8 + x)];
    EXPECT_EQ(sum, layer == 1 ? 0 : 20) << "layer " << layer;
  }
}

}  // namespace
}  // namespace inferdesk

namespace inferdesk {
namespace {

TEST(Callbacks, AThrowingCallbackLosesOnlyItsOwnRequest) {
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine e = make_engine("llama", opts);
  std::promise<FinishReason> bad_done;
  std::atomic<bool> set{false};
  e.submit(greedy({3, 4, 5}, 50), [&](const StreamEvent& ev) {
    if (ev.finished) {
      if (!set.exchange(true)) bad_done.set_value(ev.reason);
      return;
    }
    throw std::runtime_error("callback bug");
  });
  const auto ok = generate_all(e, {greedy({6, 7, 8}, 6)});
  EXPECT_EQ(ok[0].tokens.size(), 6u);
  auto fut = bad_done.get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(fut.get(), FinishReason::Error);
}

// tiny-chat-padded: config vocab_size 512 over a 480-token tokenizer (tools/golden/
// make_padded_vocab.py). Without a limit its random weights pick padded ids; with sample_vocab
// set to the tokenizer's size they never come.
TEST(SampleVocab, PaddedIdsAreNeverSampled) {
  auto run = [](int32_t sample_vocab) {
    EngineOptions opts;
    opts.num_kv_blocks = 64;
    opts.sample_vocab = sample_vocab;
    Engine e = make_engine("tiny-chat-padded", opts);
    Request r;
    r.prompt_ids = {1, 77, 200, 3};
    r.params.temperature = 1.0f;
    r.params.seed = 11;
    r.params.max_tokens = 300;
    r.params.ignore_eos = true;
    EXPECT_EQ(e.sample_vocab(), sample_vocab > 0 ? sample_vocab : 512);
    return generate_all(e, {r})[0].token_ids();
  };
  auto padded = [](const std::vector<int32_t>& ids) {
    return std::count_if(ids.begin(), ids.end(), [](int32_t id) { return id >= 480; });
  };
  const auto control = run(0);
  ASSERT_EQ(control.size(), 300u);
  EXPECT_GT(padded(control), 0) << "the fixture no longer exercises padded ids";
  const auto masked = run(480);
  ASSERT_EQ(masked.size(), 300u);
  EXPECT_EQ(padded(masked), 0);
}

TEST(SampleVocab, ALimitBeyondTheVocabularyIsRefused) {
  EngineOptions opts;
  opts.num_kv_blocks = 16;
  opts.sample_vocab = 513;
  try {
    make_engine("tiny-chat-padded", opts);
    ADD_FAILURE() << "accepted sample_vocab 513 for a 512-id model";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
}

// The first snapshot holds memory figures before any step (the GUI shows them at once).
TEST(EngineStats, FirstSnapshotHasMemoryFigures) {
  EngineOptions opts;
  opts.num_kv_blocks = 16;
  Engine e = make_engine("qwen2_moe", opts);
  const EngineStats s = e.stats();
  EXPECT_GT(s.process_rss_bytes, 0);
  EXPECT_EQ(s.num_layers, 3);
  EXPECT_EQ(s.num_experts, 8);
  EXPECT_EQ(s.expert_counts.size(), 24u);
  EXPECT_EQ(s.total_generated_tokens, 0);
}

}  // namespace
}  // namespace inferdesk
