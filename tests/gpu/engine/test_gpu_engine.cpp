// Engine behaviour on the CUDA backend with CUDA graphs on: batch invariance with chunked
// prefill, prefix-cache hits and preemption equal to cold runs (up to near ties, see
// compare_runs), graphs on vs off, seeded sampling reproducible and independent of the batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>

#include "tests/gpu/engine/gpu_engine_util.h"

namespace inferdesk {
namespace {

using gputest::agreement_rule;
using gputest::AgreementRule;
using gputest::compare_runs;
using gputest::greedy;
using gputest::is_moe_fixture;
using gputest::make_cuda_engine;

std::vector<Request> random_requests(int n, uint64_t seed, int32_t max_tokens) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_int_distribution<int32_t> tok(3, 470), len(1, 90);
  std::vector<Request> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p(static_cast<size_t>(len(rng)));
    for (auto& t : p) t = tok(rng);
    out.push_back(greedy(std::move(p), max_tokens));
  }
  return out;
}

std::vector<GenerationResult> run_alone(Engine& e, const std::vector<Request>& reqs) {
  std::vector<GenerationResult> out;
  for (const auto& r : reqs) out.push_back(generate_all(e, {r})[0]);
  return out;
}

// Every request agrees with its reference by `rule` (agreement_rule), and nearly all tokens are
// identical. Returns the largest log-prob difference of identical tokens (for the log).
double expect_equivalent(const std::vector<GenerationResult>& want, const std::vector<GenerationResult>& got,
                         const std::string& what, const AgreementRule& rule = {}) {
  EXPECT_EQ(want.size(), got.size());
  if (want.size() != got.size()) return 0;
  int same = 0, total = 0;
  double max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].reason, FinishReason::Length) << what << " request " << i << ": " << got[i].error;
    if (got[i].reason != FinishReason::Length) continue;
    int s = 0;
    EXPECT_EQ(compare_runs(want[i], got[i], rule, &s), "") << what << " request " << i;
    for (int j = 0; j < s; ++j)
      max_diff = std::max(max_diff,
                          static_cast<double>(std::abs(want[i].tokens[j].logprob - got[i].tokens[j].logprob)));
    same += s;
    total += static_cast<int>(want[i].tokens.size());
  }
  EXPECT_GE(same * 100, total * rule.min_same_percent)
      << what << ": only " << same << " of " << total << " tokens identical";
  std::printf("[ figures  ] %s: %d of %d tokens identical, identical tokens' log-probs within %.4f\n", what.c_str(),
              same, total, max_diff);
  return max_diff;
}

// The 16 requests of random_requests(16, 7, 16), each alone on a default engine, against all of
// them on an engine (backend options `o`) whose steps of at most 48 rows split the prompts across
// steps and mix them with decodes. Returns the batched engine's expert path counts.
CudaMoePathCounts check_batch_invariance(const std::string& fixture, const CudaBackendOptions& o,
                                         const std::string& what) {
  const auto reqs = random_requests(16, 7, 16);
  EngineOptions alone_opts;
  alone_opts.num_kv_blocks = 256;
  Engine alone = make_cuda_engine(fixture, alone_opts);
  const auto expected = run_alone(alone, reqs);
  EngineOptions opts;
  opts.num_kv_blocks = 256;
  opts.scheduler.max_num_batched_tokens = 48;  // prompts split across steps, mixed with decodes
  opts.scheduler.max_num_seqs = 16;
  Engine batched = make_cuda_engine(fixture, opts, o);
  expect_equivalent(expected, generate_all(batched, reqs), what, agreement_rule(fixture));
  EXPECT_GT(batched.stats().steps, 16u);
  return is_moe_fixture(fixture) ? cuda_moe_path_counts(*batched.model().backend) : CudaMoePathCounts{};
}

// The same requests, each alone, on two engines that differ only in their backend options (no
// prefix cache). Returns the expert path counts of both.
std::pair<CudaMoePathCounts, CudaMoePathCounts> check_alone_on_both(const std::string& fixture,
                                                                    const CudaBackendOptions& a,
                                                                    const CudaBackendOptions& b,
                                                                    const std::string& what) {
  const auto reqs = random_requests(16, 7, 16);
  EngineOptions opts;
  opts.num_kv_blocks = 256;
  opts.enable_prefix_caching = false;
  Engine ea = make_cuda_engine(fixture, opts, a);
  Engine eb = make_cuda_engine(fixture, opts, b);
  expect_equivalent(run_alone(ea, reqs), run_alone(eb, reqs), what, agreement_rule(fixture));
  if (!is_moe_fixture(fixture)) return {};
  return {cuda_moe_path_counts(*ea.model().backend), cuda_moe_path_counts(*eb.model().backend)};
}

class CudaBatchInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaBatchInvariance, SixteenMixedRequestsWithChunkedPrefillMatchAlone) {
  INFERDESK_REQUIRE_GPU();
  check_batch_invariance(GetParam(), CudaBackendOptions{}, GetParam() + " batched");
}

INSTANTIATE_TEST_SUITE_P(Dense, CudaBatchInvariance, ::testing::Values("llama", "qwen2", "qwen3", "mistral"),
                         [](const auto& info) { return info.param; });
// Alone, decode steps take the small-batch expert path (in graphs); batched (steps of at most 48
// rows, 96 pairs of 8 experts at top-2), the grouped path, captured for decode-only steps.
INSTANTIATE_TEST_SUITE_P(Moe, CudaBatchInvariance, ::testing::Values("qwen3_moe"),
                         [](const auto& info) { return info.param; });

// The same requests, each alone, through two sets of kernels: our GEMV and small-batch / grouped
// expert kernels (default) against cuBLASLt GEMMs and the large-batch expert path
// (small_batch_gemv off, eager). No batching is involved, so what differs is only the kernels'
// rounding: both models must agree by their rule (agreement_rule).
class CudaPaths : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaPaths, SingleRequestsAgreeAcrossKernelPaths) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions lt;
  lt.small_batch_gemv = false;
  lt.cuda_graphs = false;
  const auto [ours, cublas] = check_alone_on_both(GetParam(), CudaBackendOptions{}, lt, GetParam() + " kernel paths");
  if (is_moe_fixture(GetParam())) {
    EXPECT_GT(cublas.large, 0);
    EXPECT_EQ(cublas.small, 0);
    EXPECT_GT(ours.small, 0);
  }
}

// The MoE expert paths one at a time. Alone, prefill steps (up to 90 rows, 180 pairs) take the
// large path by default; with the grouped path's bounds raised they take the grouped one.
TEST(CudaMoePaths, GroupedPrefillAgreesWithLargePrefill) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.moe_grouped_max_pairs = 4096;
  o.moe_grouped_pairs_per_expert = 4096;
  const auto [dflt, grouped] = check_alone_on_both("qwen3_moe", CudaBackendOptions{}, o, "qwen3_moe grouped prefill");
  EXPECT_EQ(grouped.large, 0);
  EXPECT_GT(dflt.large, 0);
}

// Batched as in CudaBatchInvariance without the grouped path: steps above 8 rows take the large
// path (eager).
TEST(CudaMoePaths, BatchInvarianceWithTheLargePathOnly) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.moe_grouped_max_pairs = 0;
  const CudaMoePathCounts c = check_batch_invariance("qwen3_moe", o, "qwen3_moe batched, large path");
  EXPECT_EQ(c.grouped, 0);
  EXPECT_GT(c.large, 0);
}

INSTANTIATE_TEST_SUITE_P(DenseAndMoe, CudaPaths, ::testing::Values("qwen3", "qwen3_moe"),
                         [](const auto& info) { return info.param; });

// Every token the model runs is routed to k experts in each MoE layer and counted once: padding
// rows of the graph buckets (3 decodes padded to 4) and dense layers are not counted. Greedy
// requests of P prompt tokens and N outputs feed P + N - 1 tokens (no prefix cache, no preemption).
TEST(CudaMoe, ExpertCountersCountEveryFedTokenOncePerMoeLayer) {
  INFERDESK_REQUIRE_GPU();
  const auto reqs = random_requests(3, 17, 12);
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  opts.enable_prefix_caching = false;
  Engine e = make_cuda_engine("qwen2_moe", opts);  // layer 1 is dense (mlp_only_layers)
  const auto results = generate_all(e, reqs);
  int64_t fed = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(results[i].reason, FinishReason::Length) << results[i].error;
    fed += static_cast<int64_t>(reqs[i].prompt_ids.size() + results[i].tokens.size()) - 1;
  }
  const EngineStats st = e.stats();
  const ModelConfig& c = e.model_config();
  ASSERT_EQ(st.num_layers, c.num_hidden_layers);
  ASSERT_EQ(st.num_experts, c.num_experts);
  ASSERT_EQ(st.expert_counts.size(), static_cast<size_t>(c.num_hidden_layers * c.num_experts));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    int64_t sum = 0;
    for (int64_t x = 0; x < c.num_experts; ++x) sum += st.expert_counts[static_cast<size_t>(l * c.num_experts + x)];
    EXPECT_EQ(sum, c.is_moe_layer(l) ? fed * c.num_experts_per_tok : 0) << "layer " << l;
  }
}

TEST(CudaGraphs, GraphsOnAndOffAgree) {
  INFERDESK_REQUIRE_GPU();
  const auto reqs = random_requests(13, 21, 24);  // 13 decodes pad to the 16 bucket
  EngineOptions opts;
  opts.num_kv_blocks = 256;
  // No prefix cache: the second pass below must run exactly the steps of the first (with the
  // cache its prompts would hit the first pass's blocks, prefill fewer rows per step, and the
  // different GEMM shapes may round differently; seen flipping a near-tie of the random model).
  opts.enable_prefix_caching = false;
  Engine eager = make_cuda_engine("llama", opts, /*graphs=*/false);
  Engine graphs = make_cuda_engine("llama", opts, /*graphs=*/true);
  expect_equivalent(generate_all(eager, reqs), generate_all(graphs, reqs), "graphs");
  // And a second pass replays the captured graphs: the same tokens again, exactly.
  const auto first = generate_all(graphs, reqs);
  const auto second = generate_all(graphs, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(first[i].token_ids(), second[i].token_ids());
}

// MoE decode steps above 8 rows take the grouped expert path and are captured: 13 decodes pad to
// the 16 bucket (32 pairs of qwen3_moe's 8 experts at top-2, within the bound of 16 * 8 = 128
// pairs), and every replay routes its tokens anew.
TEST(CudaGraphs, MoeDecodeStepsAboveEightRowsAreCapturedAndAgree) {
  INFERDESK_REQUIRE_GPU();
  const auto reqs = random_requests(13, 23, 24);
  EngineOptions opts;
  opts.num_kv_blocks = 256;
  opts.enable_prefix_caching = false;  // (as in GraphsOnAndOffAgree)
  Engine eager = make_cuda_engine("qwen3_moe", opts, /*graphs=*/false);
  Engine graphs = make_cuda_engine("qwen3_moe", opts, /*graphs=*/true);
  expect_equivalent(generate_all(eager, reqs), generate_all(graphs, reqs), "qwen3_moe graphs",
                    agreement_rule("qwen3_moe"));
  const CudaMoePathCounts e = cuda_moe_path_counts(*eager.model().backend);
  const CudaMoePathCounts g = cuda_moe_path_counts(*graphs.model().backend);
  EXPECT_GT(e.grouped, 0);
  // A replayed step calls no op: only the first two steps of the bucket (eager, captured) and the
  // steps that are not decode-only call moe_experts on the graph engine.
  EXPECT_LT(g.grouped * 2, e.grouped) << "eager " << e.grouped << ", with graphs " << g.grouped;
  EXPECT_EQ(g.large, e.large) << "the same (prefill) steps take the large path";
  const auto first = generate_all(graphs, reqs);
  const auto second = generate_all(graphs, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(first[i].token_ids(), second[i].token_ids());
}

// Overlapped decode steps (EngineOptions::overlap_steps): each decode step is launched before the
// previous step's tokens reach the host and takes them from the previous sampling on the device.
// The steps are the same as without overlap (no request stops early here), so the results must be
// the same, greedy and seeded, with graphs on; and the chain must really have run.
TEST(CudaOverlap, SameResultsAsWithoutAndStepsChain) {
  INFERDESK_REQUIRE_GPU();
  auto reqs = random_requests(13, 31, 24);
  for (size_t i = 1; i < reqs.size(); i += 2) {
    reqs[i].params.temperature = 0.8f;
    reqs[i].params.top_p = 0.9f;
    reqs[i].params.seed = 7 + i;
  }
  EngineOptions opts;
  opts.num_kv_blocks = 256;
  opts.enable_prefix_caching = false;  // (as in GraphsOnAndOffAgree)
  opts.overlap_steps = false;
  Engine plain = make_cuda_engine("llama", opts);
  opts.overlap_steps = true;
  Engine over = make_cuda_engine("llama", opts);
  const auto a = generate_all(plain, reqs);
  const auto b = generate_all(over, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(a[i].token_ids(), b[i].token_ids()) << "request " << i;
    EXPECT_EQ(b[i].reason, FinishReason::Length);
    for (size_t j = 0; j < a[i].tokens.size(); ++j)
      EXPECT_NEAR(a[i].tokens[j].logprob, b[i].tokens[j].logprob, 1e-5) << i << "/" << j;
  }
  EXPECT_EQ(cuda_chained_steps(*plain.model().backend), 0);
  EXPECT_GT(cuda_chained_steps(*over.model().backend), 10);
  EXPECT_EQ(over.stats().kv_blocks_used, 0);
  // The same with the sampling's copies on the compute stream (the copy stream is the default).
  CudaBackendOptions on_compute_stream;
  on_compute_stream.tuning.sampling_copy_stream = false;
  Engine on_compute = make_cuda_engine("llama", opts, on_compute_stream);
  const auto c = generate_all(on_compute, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(a[i].token_ids(), c[i].token_ids()) << "request " << i << ", compute stream";
    for (size_t j = 0; j < a[i].tokens.size(); ++j)
      EXPECT_NEAR(a[i].tokens[j].logprob, c[i].tokens[j].logprob, 1e-5) << i << "/" << j;
  }
  EXPECT_GT(cuda_chained_steps(*on_compute.model().backend), 10);
}

// A stop token in the middle of a chain: the step launched ahead for that request is dropped,
// the other request goes on, and the engine serves the next batch.
TEST(CudaOverlap, StopTokenMidChain) {
  INFERDESK_REQUIRE_GPU();
  EngineOptions opts;
  opts.num_kv_blocks = 256;
  opts.overlap_steps = false;
  Engine plain = make_cuda_engine("llama", opts);
  opts.overlap_steps = true;
  Engine over = make_cuda_engine("llama", opts);
  Request r = greedy({11, 22, 33, 44, 55}, 16);
  const auto full = generate_all(plain, {r})[0].token_ids();
  ASSERT_EQ(full.size(), 16u);
  Request stop = r;
  stop.params.stop_token_ids = {full[5]};
  const Request other = greedy({7, 8, 9}, 16);
  const auto got = generate_all(over, {stop, other});
  EXPECT_EQ(got[0].reason, FinishReason::Stop);
  const auto want = generate_all(plain, {stop, other});
  EXPECT_EQ(got[0].token_ids(), want[0].token_ids());
  EXPECT_EQ(got[1].token_ids().size(), 16u);
  EXPECT_EQ(got[1].reason, FinishReason::Length);
  EXPECT_GT(cuda_chained_steps(*over.model().backend), 0);
  EXPECT_EQ(over.stats().kv_blocks_used, 0);
  EXPECT_EQ(generate_all(over, {other})[0].token_ids().size(), 16u);  // still serving
}

TEST(CudaPrefixCache, HitGivesSameTokensAsColdRun) {
  INFERDESK_REQUIRE_GPU();
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> tok(3, 470);
  std::vector<int32_t> prefix(150);
  for (auto& t : prefix) t = tok(rng);
  auto shared_b = prefix;
  shared_b.resize(100);
  for (int i = 0; i < 30; ++i) shared_b.push_back(tok(rng));

  EngineOptions cold_opts;
  cold_opts.num_kv_blocks = 128;
  cold_opts.enable_prefix_caching = false;
  Engine cold = make_cuda_engine("llama", cold_opts);
  const auto want = run_alone(cold, {greedy(prefix, 12), greedy(shared_b, 12)});

  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine warm = make_cuda_engine("llama", opts);
  generate_all(warm, {greedy(prefix, 12)});
  EXPECT_EQ(warm.stats().prefix_cache_hit_rate, 0.0);
  const auto got = run_alone(warm, {greedy(prefix, 12), greedy(shared_b, 12)});
  EXPECT_GT(warm.stats().prefix_cache_hit_rate, 0.0);
  expect_equivalent(want, got, "prefix cache");
}

TEST(CudaPreemption, PreemptedSequencesResumeWithTheSameTokens) {
  INFERDESK_REQUIRE_GPU();
  const auto reqs = random_requests(6, 11, 40);
  EngineOptions big;
  big.num_kv_blocks = 256;
  Engine alone = make_cuda_engine("qwen3", big);
  const auto expected = run_alone(alone, reqs);

  EngineOptions small;
  small.num_kv_blocks = 14;
  small.enable_prefix_caching = false;
  Engine tight = make_cuda_engine("qwen3", small);
  expect_equivalent(expected, generate_all(tight, reqs), "preemption");
  EXPECT_GT(tight.stats().preemptions, 0u);
  EXPECT_EQ(tight.stats().kv_blocks_used, 0);
}

TEST(CudaSampling, SeededRequestsAreReproducibleAndIndependentOfTheBatch) {
  INFERDESK_REQUIRE_GPU();
  auto reqs = random_requests(8, 5, 20);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].params.temperature = 0.8f;
    reqs[i].params.top_p = 0.9f;
    reqs[i].params.top_k = 50;
    reqs[i].params.seed = 1000 + i;
  }
  EngineOptions opts;
  opts.num_kv_blocks = 256;
  Engine e = make_cuda_engine("llama", opts);
  const auto a = generate_all(e, reqs);
  const auto b = generate_all(e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(a[i].token_ids(), b[i].token_ids()) << i;
  // The same seeded request alone draws with the same (seed, counter): same tokens while the
  // logits agree (they may differ in the last bits between batch shapes, so compare the first).
  const auto alone = generate_all(e, {reqs[3]});
  EXPECT_EQ(alone[0].tokens[0].id, a[3].tokens[0].id);
  // Different seeds give different continuations.
  int differing = 0;
  for (size_t i = 1; i < reqs.size(); ++i) differing += a[i].token_ids() != a[0].token_ids();
  EXPECT_GT(differing, 0);
}

TEST(CudaEngine, CancelStopsARunningRequest) {
  INFERDESK_REQUIRE_GPU();
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine e = make_cuda_engine("llama", opts);
  Request r = greedy({5, 6, 7, 8}, 400);
  std::promise<FinishReason> done;
  const int64_t id = e.submit(r, [&](const StreamEvent& ev) {
    if (ev.finished) done.set_value(ev.reason);
  });
  e.cancel(id);
  EXPECT_EQ(done.get_future().get(), FinishReason::Cancelled);
  EXPECT_EQ(generate_all(e, {greedy({9, 10}, 3)})[0].tokens.size(), 3u);
}

// tiny-chat-padded (vocab_size 512, tokenizer 480): with sample_vocab 480 the GPU sampler never
// returns a padded id, with or without overlapped steps; the control run without a limit does.
TEST(CudaSampling, PaddedVocabularyIsNeverSampled) {
  INFERDESK_REQUIRE_GPU();
  auto run = [](int32_t sample_vocab, bool overlap) {
    EngineOptions opts;
    opts.num_kv_blocks = 64;
    opts.sample_vocab = sample_vocab;
    opts.overlap_steps = overlap;
    Engine e = make_cuda_engine("tiny-chat-padded", opts);
    Request r;
    r.prompt_ids = {1, 77, 200, 3};
    r.params.temperature = 1.0f;
    r.params.seed = 11;
    r.params.max_tokens = 300;
    r.params.ignore_eos = true;
    r.params.logprobs = 3;
    return generate_all(e, {r})[0];
  };
  auto padded = [](const GenerationResult& g) {
    int n = 0;
    for (const auto& t : g.tokens) {
      n += t.id >= 480;
      for (const auto& top : t.top) n += top.id >= 480;
    }
    return n;
  };
  const GenerationResult control = run(0, true);
  ASSERT_EQ(control.tokens.size(), 300u) << control.error;
  EXPECT_GT(padded(control), 0) << "the fixture no longer exercises padded ids";
  for (const bool overlap : {true, false}) {
    const GenerationResult masked = run(480, overlap);
    ASSERT_EQ(masked.tokens.size(), 300u) << masked.error;
    EXPECT_EQ(padded(masked), 0) << "overlap " << overlap;
  }
}

}  // namespace
}  // namespace inferdesk
