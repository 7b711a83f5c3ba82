// Overlapped decode steps (EngineOptions::overlap_steps) on the CPU: a test backend wraps the CPU
// backend and chains steps the way the CUDA backend does — sampling "on the device" keyed by
// (seed, counter) only, sample_launch() computing at once and queueing the result, a chained
// step's tokens taken from the last launch at begin_step(). With and without overlap the engine
// must give the same tokens, finish reasons and events, and chaining must really happen.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "core/sample/sampler.h"
#include "core/util/error.h"
#include "tests/support/forwarding_backend.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

struct ChainCounters {
  int chained_steps = 0;  // begin_step() calls with tokens_from_last_sample
  int launches = 0;       // sample_launch() calls
  int fail_at_step = -1;  // begin_step() call (0-based) that throws, -1: none
  int steps = 0;
};

// The CPU backend's arithmetic; samples on the "device" (here: at once, in launch order).
class ChainingBackend final : public test::ForwardingBackend {
 public:
  ChainingBackend(std::unique_ptr<Backend> inner, ChainCounters* c) : ForwardingBackend(std::move(inner)), c_(c) {}

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
  void sample(const Tensor& logits, const std::vector<SampleRow>& rows, std::vector<SampledToken>& out) override {
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
  // The engine's statistics count the same steps (bench --json reports them).
  EXPECT_EQ(over.stats().overlapped_steps, static_cast<uint64_t>(over_c.chained_steps));
  EXPECT_EQ(plain.stats().overlapped_steps, 0u);
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

// Requests arriving from another thread at random moments, some cancelled from their callbacks
// and some ending on a stop token, while steps chain. Greedy CPU results do not depend on the
// batch (see BatchInvariance), so every request must produce exactly its tokens alone on a plain
// engine (cut at the stop token; a prefix of them when cancelled), with one final event and no
// event after it; afterwards every KV block is free.
TEST(OverlapSteps, RandomArrivalsCancelsAndStopsSoak) {
  ChainCounters pc, oc;
  Engine plain = make_engine("qwen2", false, &pc);
  Engine over = make_engine("qwen2", true, &oc, 6);
  std::mt19937 rng(17);
  std::uniform_int_distribution<int32_t> tok(3, 500), len(1, 30), max_tok(2, 24), pct(0, 99);
  constexpr int kRequests = 24;
  struct Case {
    Request req;
    bool cancel = false;
    std::vector<int32_t> want;  // alone, plain engine
  };
  std::vector<Case> cases(kRequests);
  for (Case& c : cases) {
    c.req.prompt_ids.resize(static_cast<size_t>(len(rng)));
    for (auto& t : c.req.prompt_ids) t = tok(rng);
    c.req.params.temperature = 0;
    c.req.params.ignore_eos = true;
    c.req.params.max_tokens = max_tok(rng);
    c.want = generate_all(plain, {c.req})[0].token_ids();
    if (pct(rng) < 30 && c.want.size() > 3) {  // stop on a token in the middle
      const int32_t stop = c.want[c.want.size() / 2];
      c.req.params.stop_token_ids = {stop};
      c.want.resize(static_cast<size_t>(std::find(c.want.begin(), c.want.end(), stop) - c.want.begin()) + 1);
    }
    c.cancel = pct(rng) < 20;
  }
  struct Seen {
    std::mutex m;
    std::vector<int32_t> tokens;
    int finals = 0;
    bool after_final = false;
    FinishReason reason = FinishReason::None;
  };
  std::vector<Seen> seen(kRequests);
  std::atomic<int> finished{0};
  std::promise<void> all_done;
  for (int i = 0; i < kRequests; ++i) {
    Case& c = cases[static_cast<size_t>(i)];
    Seen& sn = seen[static_cast<size_t>(i)];
    over.submit(c.req, [&, cancel = c.cancel](const StreamEvent& ev) {
      std::lock_guard lock(sn.m);
      if (sn.finals > 0) sn.after_final = true;
      for (const auto& t : ev.tokens) sn.tokens.push_back(t.id);
      if (cancel && sn.tokens.size() >= 2 && !ev.finished) over.cancel(ev.request_id);
      if (ev.finished) {
        ++sn.finals;
        sn.reason = ev.reason;
        if (++finished == kRequests) all_done.set_value();
      }
    });
    std::this_thread::sleep_for(std::chrono::microseconds(pct(rng) * 20));
  }
  ASSERT_EQ(all_done.get_future().wait_for(std::chrono::seconds(120)), std::future_status::ready);
  int cancelled = 0, stopped = 0;
  for (int i = 0; i < kRequests; ++i) {
    const Case& c = cases[static_cast<size_t>(i)];
    Seen& sn = seen[static_cast<size_t>(i)];
    std::lock_guard lock(sn.m);
    cancelled += sn.reason == FinishReason::Cancelled;
    stopped += sn.reason == FinishReason::Stop;
    EXPECT_EQ(sn.finals, 1) << i;
    EXPECT_FALSE(sn.after_final) << i;
    if (sn.reason == FinishReason::Cancelled) {
      ASSERT_LE(sn.tokens.size(), c.want.size()) << i;
      EXPECT_TRUE(std::equal(sn.tokens.begin(), sn.tokens.end(), c.want.begin())) << i;
    } else {
      EXPECT_EQ(sn.tokens, c.want) << i;
      EXPECT_EQ(sn.reason, c.req.params.stop_token_ids.empty() ? FinishReason::Length : FinishReason::Stop) << i;
    }
  }
  EXPECT_GT(cancelled, 0);  // the soak did exercise both endings
  EXPECT_GT(stopped, 0);
  EXPECT_GT(oc.chained_steps, 0);
  // The engine publishes its stats after the final events: wait until it is idle.
  for (int k = 0; k < 200 && over.stats().kv_blocks_used != 0; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(over.stats().kv_blocks_used, 0);
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
