// Overlapped decode steps (EngineOptions::overlap_steps) on the CPU: a test backend wraps the CPU
// backend and chains steps the way the CUDA backend does — sampling "on the device" keyed by
// (seed, counter) only, sample_launch() computing at once and queueing the result, a chained
// step's tokens taken from the last launch at begin_step(). With and without overlap the engine
// must give the same tokens, finish reasons and events, and chaining must really happen.
#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "core/sample/sampler.h"
#include "core/util/error.h"
#include "tests/support/forwarding_backend.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

struct ChainCounters {
  int chained_steps = 0;   // begin_step() calls with tokens_from_last_sample
  int launches = 0;        // sample_launch() calls
  int fail_at_step = -1;   // begin_step() call (0-based) that throws, -1: none
  int steps = 0;
};

// The CPU backend's arithmetic; samples on the "device" (here: at once, in launch order).
class ChainingBackend final : public test::ForwardingBackend {
 public:
  ChainingBackend(std::unique_ptr<Backend> inner, ChainCounters* c)
      : ForwardingBackend(std::move(inner)), c_(c) {}

  std::string name() const override { return "chaining-test"; }
  StepPlan begin_step(const StepInput& step) override {
    if (c_->steps++ == c_->fail_at_step) throw Error(ErrorCode::OutOfMemory, "injected failure");
    step_ = step;
    if (step.tokens_from_last_sample) {
      ++c_->chained_steps;
      if (step.token_ids.size() != last_tokens_.size())
        throw Error(ErrorCode::Internal, "chained step does not match the last sampling");
      for (int32_t t : step.token_ids)
        if (t != -1) throw Error(ErrorCode::Internal, "a chained step's host tokens must be -1");
      step_.token_ids = last_tokens_;
      step_.tokens_from_last_sample = false;
    }
    return inner().begin_step(step_);
  }

  bool can_sample() const override { return true; }
  bool can_chain_steps() const override { return true; }
  void sample(const Tensor& logits, const std::vector<SampleRow>& rows,
              std::vector<SampledToken>& out) override {
    out = draw(logits, rows);
  }
  void sample_launch(const Tensor& logits, const std::vector<SampleRow>& rows) override {
    if (queued_.size() >= 2) throw Error(ErrorCode::Internal, "more than two launches outstanding");
    ++c_->launches;
    queued_.push_back(draw(logits, rows));
    last_tokens_.clear();
    for (const SampledToken& t : queued_.back()) last_tokens_.push_back(t.token);
  }
  void sample_collect(std::vector<SampledToken>& out) override {
    if (queued_.empty()) throw Error(ErrorCode::Internal, "collect without a launch");
    out = std::move(queued_.front());
    queued_.pop_front();
  }
  void sample_abort() override {
    queued_.clear();
    last_tokens_.clear();
  }

 private:
  // The draw depends on (seed, counter) only, as on the GPU.
  std::vector<SampledToken> draw(const Tensor& logits, const std::vector<SampleRow>& rows) {
    const auto V = static_cast<size_t>(logits.cols);
    host_.resize(static_cast<size_t>(logits.rows) * V);
    inner().to_host(logits, host_.data());
    std::vector<SampledToken> out;
    for (size_t i = 0; i < rows.size(); ++i) {
      SamplerRng rng(rows[i].seed * 0x9E3779B97F4A7C15ull + rows[i].counter);
      SampleResult r = sampler_.sample(std::span<const float>(host_.data() + i * V, V), *rows[i].params,
                                       rows[i].prompt_ids, rows[i].output_ids, rng);
      out.push_back(SampledToken{r.token, r.logprob, std::move(r.top)});
    }
    return out;
  }

  ChainCounters* c_;
  StepInput step_;
  std::vector<int32_t> last_tokens_;
  std::deque<std::vector<SampledToken>> queued_;
  std::vector<float> host_;
  Sampler sampler_;
};

Engine make_engine(const std::string& model, bool overlap, ChainCounters* c, int32_t max_seqs = 8) {
  EngineOptions o;
  o.num_kv_blocks = 128;
  o.overlap_steps = overlap;
  o.scheduler.max_num_seqs = max_seqs;
  o.scheduler.max_num_batched_tokens = 64;
  return Engine(load_model_folder(test::golden_models_dir() / model,
                                  std::make_unique<ChainingBackend>(make_cpu_backend(), c)),
                o);
}

std::vector<Request> mixed_requests(uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_int_distribution<int32_t> tok(3, 500), len(1, 40), max_tok(1, 20);
  std::vector<Request> out;
  for (int i = 0; i < 6; ++i) {
    Request r;
    r.prompt_ids.resize(static_cast<size_t>(len(rng)));
    for (auto& t : r.prompt_ids) t = tok(rng);
    r.params.max_tokens = max_tok(rng);
    r.params.ignore_eos = true;
    if (i % 2 == 0) {
      r.params.temperature = 0;  // greedy
    } else {
      r.params.temperature = 0.9f;
      r.params.top_p = 0.95f;
      r.params.seed = 100 + i;
      r.params.logprobs = 2;
    }
    out.push_back(std::move(r));
  }
  return out;
}

struct Outcome {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<FinishReason> reasons;
  std::vector<std::vector<float>> logprobs;
};

Outcome run(Engine& e, const std::vector<Request>& reqs) {
  Outcome o;
  for (const auto& r : generate_all(e, reqs)) {
    o.tokens.push_back(r.token_ids());
    o.reasons.push_back(r.reason);
    std::vector<float> lp;
    for (const auto& t : r.tokens) lp.push_back(t.logprob);
    o.logprobs.push_back(lp);
  }
  return o;
}

TEST(OverlapSteps, SameTokensAsWithoutAndStepsReallyChain) {
  const auto reqs = mixed_requests(5);
  ChainCounters plain_c, over_c;
  Engine plain = make_engine("qwen2", false, &plain_c);
  Engine over = make_engine("qwen2", true, &over_c);
  const Outcome a = run(plain, reqs), b = run(over, reqs);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.reasons, b.reasons);
  EXPECT_EQ(a.logprobs, b.logprobs);
  for (size_t i = 0; i < reqs.size(); ++i)
    EXPECT_EQ(static_cast<int32_t>(b.tokens[i].size()), reqs[i].params.max_tokens) << i;
  EXPECT_EQ(plain_c.chained_steps, 0);
  EXPECT_EQ(plain_c.launches, 0);
  EXPECT_GT(over_c.chained_steps, 5);  // most decode steps were launched ahead
  // Every sequence's blocks come back: a second run has the whole cache again.
  EXPECT_EQ(run(over, reqs).tokens, a.tokens);
  EXPECT_EQ(over.stats().kv_blocks_used, 0);
}

TEST(OverlapSteps, StopTokenMidChainDropsTheExtraToken) {
  ChainCounters plain_c, over_c;
  Engine plain = make_engine("qwen2", false, &plain_c);
  Engine over = make_engine("qwen2", true, &over_c);
  // Find the 4th greedy token of a prompt, then stop on it: the overlapped engine has already
  // launched the next step for that sequence and must drop that row's token.
  Request r;
  r.prompt_ids = {11, 22, 33, 44, 55};
  r.params.temperature = 0;
  r.params.max_tokens = 12;
  r.params.ignore_eos = true;
  const auto full = generate_all(plain, {r})[0].token_ids();
  ASSERT_EQ(full.size(), 12u);
  Request stop = r;
  stop.params.stop_token_ids = {full[3]};
  Request other = r;  // keeps the batch going past the stop
  other.prompt_ids = {7, 8, 9};
  const Outcome a = run(plain, {stop, other}), b = run(over, {stop, other});
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.reasons, b.reasons);
  EXPECT_EQ(b.reasons[0], FinishReason::Stop);
  EXPECT_LE(b.tokens[0].size(), 4u);
  EXPECT_GT(over_c.chained_steps, 0);
}

TEST(OverlapSteps, NewRequestsBreakTheChainAndAreServed) {
  ChainCounters c;
  Engine e = make_engine("qwen2", true, &c, 4);
  const auto reqs = mixed_requests(9);  // 6 requests, 4 at a time: the waiting ones join later
  ChainCounters pc;
  Engine plain = make_engine("qwen2", false, &pc, 4);
  EXPECT_EQ(run(e, reqs).tokens, run(plain, reqs).tokens);
  EXPECT_GT(c.chained_steps, 0);
}

TEST(OverlapSteps, PenaltiesDoNotChain) {
  ChainCounters c;
  Engine e = make_engine("qwen2", true, &c);
  auto reqs = mixed_requests(3);
  for (auto& r : reqs) r.params.repetition_penalty = 1.3f;
  ChainCounters pc;
  Engine plain = make_engine("qwen2", false, &pc);
  EXPECT_EQ(run(e, reqs).tokens, run(plain, reqs).tokens);
  EXPECT_EQ(c.chained_steps, 0);
  EXPECT_GT(c.launches, 0);
}

TEST(OverlapSteps, AFailedStepFailsItsRequestsAndTheEngineGoesOn) {
  ChainCounters c;
  Engine e = make_engine("qwen2", true, &c);
  c.fail_at_step = 4;  // a decode step, after chaining started
  Request r;
  r.prompt_ids = {5, 6, 7};
  r.params.temperature = 0;
  r.params.max_tokens = 10;
  r.params.ignore_eos = true;
  const auto failed = generate_all(e, {r, r});
  for (const auto& f : failed) EXPECT_EQ(f.reason, FinishReason::Error);
  // The scheduler and the backend's launched samplings were reset: the next request runs.
  const auto ok = generate_all(e, {r});
  EXPECT_EQ(ok[0].reason, FinishReason::Length);
  EXPECT_EQ(ok[0].token_ids().size(), 10u);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

}  // namespace
}  // namespace inferdesk
