// The engine with an FP8 (E4M3) KV cache (EngineOptions::kv_cache_dtype, per-layer scales as a
// checkpoint's would be) on the CUDA backend against the CPU backend's FP8-KV run of the same
// requests: the
// golden fixtures' prompts alone and batched (prefill chunks, graph-captured decode; the fused
// q|k|v GEMV's cache write for the models without q/k norms, qk_norm_rope_write_kv for Qwen3),
// prefix-cache hits and preemption, dense and MoE; and the cache's size: half the bytes per block,
// twice the blocks for one budget.
//
// The rule is the golden tests' (tests/support/golden.h, vLLM's) for the tokens: equal until the
// first difference, where each side's token is in the other's top 5. Log-probabilities move more
// than on a BF16 cache: the CPU rounds K/V through E4M3 from F32 activations, the GPU from BF16
// ones, so values near an E4M3 rounding midpoint take the neighbouring code (an E4M3 step, 6-12%)
// on one side, and that rounding amplifies the BF16-vs-F32 differences (within 0.05 on a BF16
// cache). Measured on the H200 (scales 0.5 / 0.25, x2 on odd layers), CUDA against CPU, both FP8:
// every request within vLLM's rule; tokens identical before the first difference 57 / 82 / 87 /
// 96 of 96 (llama, qwen2, qwen3, mistral), 70 / 80 / 96 (mixtral, qwen2_moe, qwen3_moe), 14 of 24
// for the prefix-cache hits (llama), 229 and 240 of 240 preempted (qwen3, mixtral); their
// log-probs within 0.18 (llama), 0.06-0.08 (other dense), 0.36 / 0.06 / 0.50 (MoE, at routing
// flips). The FP8 cache's own effect, the CPU's FP8-KV run against its F32-KV run (scales 1) on
// the same prompts: log-probs up to 0.29 (llama), 0.09-0.15 (other dense), 0.15-0.51 (MoE), and
// 49 / 70 / 86 / 72 / 76 / 65 / 96 of 96 tokens identical: these tiny random models sit near ties
// often, so the identical share says little beyond "the cache is read right" (a wrong scale or
// layout changes the first token). Hence: vLLM's token rule; identical tokens' log-probs within
// 0.25 (dense; MoE 1.0, the engine tests' MoE rule, agreement_rule); at least half the tokens
// identical. Steps at the fixtures' routing near ties (test::kRouterNearTie) compare only the
// token, as in the golden tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/util/error.h"
#include "tests/gpu/engine/gpu_engine_util.h"

namespace inferdesk {
namespace {

struct KvOpts {
  KvCacheDtype dtype = KvCacheDtype::Fp8;
  float k_scale = 1.0f, v_scale = 1.0f;  // layer l: times 1 + l % 2 (neighbours differ)
};

Engine make_engine(const std::string& fixture, EngineOptions opts, bool cuda, const KvOpts& kv = {}) {
  LoadedModel m = load_model_folder(test::golden_models_dir() / fixture,
                                    cuda ? make_cuda_backend() : make_cpu_backend());
  opts.kv_cache_dtype = kv.dtype;
  if (kv.k_scale != 1.0f || kv.v_scale != 1.0f)
    for (int64_t l = 0; l < m.config.num_hidden_layers; ++l) {
      m.kv_k_scales.push_back(kv.k_scale * static_cast<float>(1 + l % 2));
      m.kv_v_scales.push_back(kv.v_scale * static_cast<float>(1 + l % 2));
    }
  return Engine(std::move(m), opts);
}

// A CPU result as a golden case (tokens and their top-5), for compare_with_golden.
test::GoldenCase as_golden(const Request& r, const GenerationResult& g, std::vector<double> router_margin = {}) {
  test::GoldenCase c;
  c.prompt_ids = r.prompt_ids;
  for (const GeneratedToken& t : g.tokens) {
    c.tokens.push_back(t.id);
    std::vector<std::pair<int32_t, float>> top;
    for (const auto& e : t.top) top.emplace_back(e.id, e.logprob);
    c.top5.push_back(std::move(top));
  }
  c.router_margin = std::move(router_margin);
  return c;
}

std::vector<GenerationResult> run_alone(Engine& e, const std::vector<Request>& reqs) {
  std::vector<GenerationResult> out;
  for (const auto& r : reqs) out.push_back(generate_all(e, {r})[0]);
  return out;
}

struct Fp8Rule {
  double logprob_tol;
  int min_same_percent;
};
Fp8Rule fp8_rule(const std::string& fixture) {
  return gputest::is_moe_fixture(fixture) ? Fp8Rule{1.0, 50} : Fp8Rule{0.25, 50};
}

// Every CUDA result against the CPU's by the rule above. Prints the identical tokens and the
// largest log-prob difference of the compared steps.
void expect_matches_cpu(const std::vector<Request>& reqs, const std::vector<GenerationResult>& cpu,
                        const std::vector<GenerationResult>& gpu, const std::string& fixture, const std::string& what,
                        const std::vector<std::vector<double>>& margins = {}) {
  const Fp8Rule rule = fp8_rule(fixture);
  double max_diff = 0;
  int same = 0, total = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(cpu[i].reason, FinishReason::Length) << what << " request " << i << ": " << cpu[i].error;
    EXPECT_EQ(gpu[i].reason, FinishReason::Length) << what << " request " << i << ": " << gpu[i].error;
    const test::GoldenCase ref = as_golden(reqs[i], cpu[i], i < margins.size() ? margins[i] : std::vector<double>{});
    int steps = 0;
    EXPECT_EQ(test::compare_with_golden(ref, gpu[i], rule.logprob_tol, &steps, test::kRouterNearTie), "")
        << what << " request " << i;
    for (int s = 0; s < steps; ++s)
      max_diff = std::max(max_diff,
                          static_cast<double>(std::fabs(gpu[i].tokens[s].logprob - cpu[i].tokens[s].logprob)));
    same += steps;
    total += static_cast<int>(cpu[i].tokens.size());
  }
  EXPECT_GE(same * 100, total * rule.min_same_percent) << what << ": " << same << " of " << total << " identical";
  std::printf("[ figures  ] %s, FP8 KV, CUDA vs CPU: %d of %d tokens identical, their log-probs within %.4f\n",
              what.c_str(), same, total, max_diff);
}

std::vector<Request> random_requests(int n, uint64_t seed, int32_t max_tokens) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_int_distribution<int32_t> tok(3, 470), len(1, 90);
  std::vector<Request> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p(static_cast<size_t>(len(rng)));
    for (auto& t : p) t = tok(rng);
    out.push_back(gputest::greedy(std::move(p), max_tokens));
  }
  return out;
}

class CudaKvFp8Golden : public ::testing::TestWithParam<std::string> {};

// Each fixture prompt alone and all together (chunked prefill mixed with decode rows), per-layer
// scales 0.5 / 0.25 (1.0 / 0.5 on odd layers).
TEST_P(CudaKvFp8Golden, MatchesCpuFp8Kv) {
  INFERDESK_REQUIRE_GPU();
  const test::GoldenModel g = test::read_golden(GetParam());
  std::vector<Request> reqs;
  std::vector<std::vector<double>> margins;
  for (const auto& c : g.cases) {
    reqs.push_back(test::golden_request(c, g.max_new_tokens));
    margins.push_back(c.router_margin);
  }
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  const KvOpts kv{KvCacheDtype::Fp8, 0.5f, 0.25f};
  Engine cpu = make_engine(GetParam(), opts, /*cuda=*/false, kv);
  Engine gpu = make_engine(GetParam(), opts, /*cuda=*/true, kv);
  const auto want = run_alone(cpu, reqs);
  const std::string& f = GetParam();
  expect_matches_cpu(reqs, want, run_alone(gpu, reqs), f, f + " alone", margins);
  expect_matches_cpu(reqs, want, generate_all(gpu, reqs), f, f + " batched", margins);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaKvFp8Golden,
                         ::testing::Values("llama", "qwen2", "qwen3", "mistral", "mixtral", "qwen2_moe", "qwen3_moe"),
                         [](const auto& info) { return info.param; });

// A request sharing 100 of another's 150 prompt tokens hits its cached E4M3 blocks.
TEST(CudaKvFp8, PrefixCacheHitMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> tok(3, 470);
  std::vector<int32_t> prefix(150);
  for (auto& t : prefix) t = tok(rng);
  auto shared = prefix;
  shared.resize(100);
  for (int i = 0; i < 30; ++i) shared.push_back(tok(rng));
  const std::vector<Request> reqs = {gputest::greedy(prefix, 12), gputest::greedy(shared, 12)};

  EngineOptions cold;
  cold.num_kv_blocks = 128;
  cold.enable_prefix_caching = false;
  Engine cpu = make_engine("llama", cold, /*cuda=*/false);
  const auto want = run_alone(cpu, reqs);

  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine warm = make_engine("llama", opts, /*cuda=*/true);
  generate_all(warm, {reqs[0]});
  EXPECT_EQ(warm.stats().prefix_cache_hit_rate, 0.0);
  const auto got = run_alone(warm, reqs);
  EXPECT_GT(warm.stats().prefix_cache_hit_rate, 0.0);
  expect_matches_cpu(reqs, want, got, "llama", "llama prefix-cache hits");
}

// 6 requests of up to 90 + 40 tokens in 14 blocks of 16: sequences are preempted, their blocks
// freed, and recomputed into other blocks when they resume. Dense (qk_norm_rope_write_kv) and MoE
// (the fused GEMV's cache write); the MoE model by the engine tests' MoE rule (agreement_rule:
// a routing flip may move a token without a near tie at the output).
TEST(CudaKvFp8, PreemptedSequencesResumeLikeTheCpu) {
  INFERDESK_REQUIRE_GPU();
  for (const std::string fixture : {"qwen3", "mixtral"}) {
    SCOPED_TRACE(fixture);
    const auto reqs = random_requests(6, 11, 40);
    EngineOptions big;
    big.num_kv_blocks = 256;
    Engine cpu = make_engine(fixture, big, /*cuda=*/false);
    const auto want = run_alone(cpu, reqs);
    EngineOptions small;
    small.num_kv_blocks = 14;
    small.enable_prefix_caching = false;
    Engine tight = make_engine(fixture, small, /*cuda=*/true);
    const auto got = generate_all(tight, reqs);
    EXPECT_GT(tight.stats().preemptions, 0u);
    EXPECT_EQ(tight.stats().kv_blocks_used, 0);
    if (!gputest::is_moe_fixture(fixture)) {
      expect_matches_cpu(reqs, want, got, fixture, fixture + " preemption");
      continue;
    }
    int same = 0, total = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      int s = 0;
      EXPECT_EQ(gputest::compare_runs(want[i], got[i], gputest::agreement_rule(fixture), &s), "") << "request " << i;
      same += s;
      total += static_cast<int>(want[i].tokens.size());
    }
    EXPECT_GE(same * 100, total * gputest::agreement_rule(fixture).min_same_percent) << same << " of " << total;
    std::printf("[ figures  ] FP8 KV preemption (%s), CUDA vs CPU: %d of %d tokens identical\n", fixture.c_str(), same,
                total);
  }
}

KvCacheShape kv_shape(int32_t layers, int32_t blocks, int32_t kv_heads, int32_t head_dim) {
  KvCacheShape s;
  s.num_layers = layers;
  s.num_blocks = blocks;
  s.num_kv_heads = kv_heads;
  s.head_dim = head_dim;
  return s;
}

// An E4M3 block takes half a BF16 block's bytes, so the same budget holds twice the blocks, and
// the cache takes the same memory.
TEST(CudaKvFp8, HalfTheBytesPerBlockTwiceTheBlocks) {
  INFERDESK_REQUIRE_GPU();
  std::unique_ptr<Backend> be = make_cuda_backend();
  ASSERT_TRUE(be->supports_kv_dtype(KvCacheDtype::Fp8)) << "the H200 (sm_90) runs E4M3 conversions";
  for (const KvCacheShape& s0 : {kv_shape(32, 0, 8, 128), kv_shape(2, 0, 2, 32)}) {
    KvCacheShape s8 = s0;
    s8.dtype = KvCacheDtype::Fp8;
    EXPECT_EQ(be->kv_block_bytes(s8) * 2, be->kv_block_bytes(s0));
    EXPECT_EQ(be->kv_block_bytes(s8), int64_t{s0.num_layers} * 2 * s0.num_kv_heads * s0.block_size * s0.head_dim);
  }
  EngineOptions opts;
  opts.kv_cache_bytes = 24 << 20;
  Engine bf16 = make_engine("llama", opts, /*cuda=*/true, KvOpts{KvCacheDtype::Auto});
  Engine fp8 = make_engine("llama", opts, /*cuda=*/true);
  const int32_t nb = bf16.num_kv_blocks(), n8 = fp8.num_kv_blocks();
  EXPECT_GE(n8, 2 * nb);
  EXPECT_LE(n8, 2 * nb + 1);
  EXPECT_LE(fp8.stats().memory.kv_cache, opts.kv_cache_bytes);
  EXPECT_GE(fp8.stats().memory.kv_cache * 100, bf16.stats().memory.kv_cache * 99);
  std::printf("[ figures  ] %d MiB of KV cache: %d BF16 blocks, %d E4M3 blocks\n",
              static_cast<int>(opts.kv_cache_bytes >> 20), nb, n8);
  // And the blocks serve a request.
  EXPECT_EQ(generate_all(fp8, {gputest::greedy({5, 6, 7, 8}, 8)})[0].tokens.size(), 8u);
}

TEST(CudaKvFp8, BadScalesAreRejected) {
  INFERDESK_REQUIRE_GPU();
  std::unique_ptr<Backend> be = make_cuda_backend();
  KvCacheShape s = kv_shape(2, 4, 2, 64);
  s.dtype = KvCacheDtype::Fp8;
  s.k_scales = {1.0f};  // one value for two layers
  EXPECT_THROW(be->init_kv_cache(s), Error);
  s.k_scales = {1.0f, NAN};
  EXPECT_THROW(be->init_kv_cache(s), Error);
  s.k_scales = {1.0f, 0.0f};
  EXPECT_THROW(be->init_kv_cache(s), Error);
  s.k_scales = {1.0f, 2.0f};
  s.v_scales = {0.5f, 0.25f};
  EXPECT_NO_THROW(be->init_kv_cache(s));
  EXPECT_EQ(be->memory_info().kv_cache, 4 * be->kv_block_bytes(s));
}

}  // namespace
}  // namespace inferdesk
