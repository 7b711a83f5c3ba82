#include "core/engine/engine.h"

#include <algorithm>
#include <deque>
#include <random>

#include "core/engine/step_builder.h"
#include "core/sample/sampler.h"
#include "core/sched/finish_policy.h"
#include "core/util/error.h"

namespace inferdesk {

using Clock = std::chrono::steady_clock;

struct Engine::RequestState {
  int64_t id = 0;
  SamplingParams params;
  StreamCallback callback;
  SamplerRng rng;
  uint64_t seed = 0;
  Clock::time_point submitted;
  double ttft = -1;
  int32_t num_prompt = 0;
  int32_t cached_prompt = -1;
  RequestState(int64_t i, SamplingParams p, StreamCallback cb, uint64_t seed)
      : id(i), params(std::move(p)), callback(std::move(cb)), rng(seed), seed(seed), submitted(Clock::now()) {}
};

struct Engine::Inbox {
  struct Submit {
    int64_t id;
    Request request;
    StreamCallback callback;
    uint64_t seed;
  };
  std::deque<Submit> submits;
  std::vector<int64_t> cancels;
  bool stop = false;
};

Engine::Engine(LoadedModel model, EngineOptions options)
    : model_(std::move(model)), options_(options), inbox_(std::make_unique<Inbox>()) {
  const ModelConfig& c = model_.config;
  if (options_.sample_vocab < 0 || options_.sample_vocab > c.vocab_size)
    throw Error(ErrorCode::InvalidArgument, "sample_vocab " + std::to_string(options_.sample_vocab) +
                                                " must be between 1 and the model's vocab_size " +
                                                std::to_string(c.vocab_size) + " (0: all of it)");
  sample_vocab_ = options_.sample_vocab > 0 ? options_.sample_vocab : static_cast<int32_t>(c.vocab_size);
  sampler_ = Sampler(sample_vocab_);
  KvCacheShape shape;
  shape.num_layers = static_cast<int32_t>(c.num_hidden_layers);
  shape.block_size = options_.block_size;
  shape.num_kv_heads = static_cast<int32_t>(c.num_key_value_heads);
  shape.head_dim = static_cast<int32_t>(c.head_dim);
  shape.dtype = options_.kv_cache_dtype;
  if (!model_.backend->supports_kv_dtype(shape.dtype))
    throw Error(ErrorCode::Unsupported,
                "the " + model_.backend->name() + " backend has no " + kv_dtype_name(shape.dtype) +
                    " KV cache on this device");
  if (shape.dtype == KvCacheDtype::Fp8) {
    shape.k_scales = model_.kv_k_scales;
    shape.v_scales = model_.kv_v_scales;
  }
  // Memory plan: weights are loaded; activations for the largest step next; the KV cache gets
  // what is left (of the device's allowed fraction on a GPU; of kv_cache_bytes on the CPU).
  const SchedulerConfig& sc = options_.scheduler;
  model_.model->reserve(*model_.backend, std::max(sc.max_num_batched_tokens, sc.max_num_seqs), sc.max_num_seqs);
  num_blocks_ = options_.num_kv_blocks;
  const int64_t per_block = model_.backend->kv_block_bytes(shape);
  int64_t budget = options_.kv_cache_bytes > 0 ? options_.kv_cache_bytes : int64_t{1} << 30;
  if (num_blocks_ <= 0) {
    const int64_t device_budget = model_.backend->kv_cache_budget(options_.gpu_memory_utilization);
    if (device_budget != 0)
      budget = options_.kv_cache_bytes > 0 ? std::min(options_.kv_cache_bytes, device_budget) : device_budget;
    num_blocks_ = static_cast<int32_t>(std::clamp<int64_t>(budget / per_block, 0, 1 << 24));
  }
  if (num_blocks_ < 1)
    throw Error(ErrorCode::OutOfMemory,
                "no memory is left for the KV cache (" + std::to_string(budget >> 20) +
                    " MiB available, one block of " + std::to_string(options_.block_size) + " tokens needs " +
                    std::to_string(per_block >> 10) +
                    " KiB): use a smaller model, a shorter context or a higher memory fraction");
  shape.num_blocks = num_blocks_;
  model_.backend->init_kv_cache(shape);
  max_model_len_ = options_.max_model_len > 0
                       ? options_.max_model_len
                       : static_cast<int32_t>(std::min<int64_t>(c.max_position_embeddings, 1 << 24));
  kv_ = std::make_unique<KvCacheManager>(num_blocks_, options_.block_size, options_.enable_prefix_caching);
  scheduler_ = std::make_unique<Scheduler>(options_.scheduler, *kv_);
  tracker_ = std::make_unique<StatsTracker>();
  scratch_ = std::make_unique<SamplerScratch>();
  stats_.kv_blocks_total = num_blocks_;
  // The first snapshot already holds the memory figures (callers show them before any step).
  stats_.memory = model_.backend->memory_info();
  stats_.process_rss_bytes = process_rss_bytes();
  stats_.process_peak_rss_bytes = process_peak_rss_bytes();
  if (c.is_moe()) {
    stats_.num_layers = static_cast<int32_t>(c.num_hidden_layers);
    stats_.num_experts = static_cast<int32_t>(c.num_experts);
    stats_.expert_counts.assign(static_cast<size_t>(c.num_hidden_layers * c.num_experts), 0);
  }
  thread_ = std::thread([this] { run(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mutex_);
    inbox_->stop = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t Engine::validate(Request& request) const {
  request.params.validate();
  const auto& c = model_.config;
  if (request.prompt_ids.empty())
    throw Error(ErrorCode::InvalidArgument, "the prompt is empty: give at least one token");
  for (int32_t id : request.prompt_ids)
    if (id < 0 || id >= c.vocab_size)
      throw Error(ErrorCode::InvalidArgument, "prompt token id " + std::to_string(id) +
                                                  " is outside the vocabulary (0.." + std::to_string(c.vocab_size - 1) +
                                                  ")");
  const int64_t len = static_cast<int64_t>(request.prompt_ids.size());
  if (len >= max_model_len_)
    throw Error(ErrorCode::InvalidArgument, "the prompt has " + std::to_string(len) +
                                                " tokens but the model's context is " + std::to_string(max_model_len_) +
                                                " tokens");
  // Never generate past the context window.
  request.params.max_tokens = static_cast<int32_t>(std::min<int64_t>(request.params.max_tokens, max_model_len_ - len));
  return request.params.seed ? *request.params.seed : std::random_device{}();
}

int64_t Engine::submit(Request request, StreamCallback callback) {
  const uint64_t seed = validate(request);
  const int64_t id = next_id_.fetch_add(1);
  {
    std::lock_guard lock(mutex_);
    inbox_->submits.push_back({id, std::move(request), std::move(callback), seed});
  }
  wake_.notify_all();
  return id;
}

std::vector<int64_t> Engine::submit_batch(std::vector<Request> requests, std::vector<StreamCallback> callbacks) {
  if (requests.size() != callbacks.size())
    throw Error(ErrorCode::InvalidArgument, "submit_batch: " + std::to_string(requests.size()) + " requests but " +
                                                std::to_string(callbacks.size()) + " callbacks");
  std::vector<uint64_t> seeds;
  seeds.reserve(requests.size());
  for (Request& r : requests) seeds.push_back(validate(r));  // all or nothing
  std::vector<int64_t> ids;
  ids.reserve(requests.size());
  {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < requests.size(); ++i) {
      ids.push_back(next_id_.fetch_add(1));
      inbox_->submits.push_back({ids.back(), std::move(requests[i]), std::move(callbacks[i]), seeds[i]});
    }
  }
  wake_.notify_all();
  return ids;
}

bool Engine::cancel(int64_t request_id) {
  {
    std::lock_guard lock(mutex_);
    if (request_id <= 0 || request_id >= next_id_.load()) return false;
    inbox_->cancels.push_back(request_id);
  }
  wake_.notify_all();
  return true;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Engine::run() {
  bool stop = false;
  while (!stop) {
    drain_inbox(stop);
    if (stop) break;
    if (scheduler_->has_unfinished() || in_flight_) {
      try {
        step();
      } catch (const std::exception& e) {
        // A failing step (e.g. out of device memory) fails the requests in it, not the app: the
        // launched steps are forgotten, so the next request starts from a clean scheduler.
        drop_launched_steps();
        std::vector<int64_t> ids;
        for (auto& [id, st] : requests_) ids.push_back(id);
        for (int64_t id : ids) finish_request(id, FinishReason::Error, e.what());
        flush_events();
      }
    }
  }
  if (in_flight_) drop_launched_steps();  // stopped with a launched step
  std::vector<int64_t> ids;
  for (auto& [id, st] : requests_) ids.push_back(id);
  for (int64_t id : ids) finish_request(id, FinishReason::Cancelled, "");
  flush_events();
}

void Engine::drop_launched_steps() {
  in_flight_.reset();
  scheduler_->abort_steps();
  try {
    model_.backend->sample_abort();
  } catch (...) {  // the step failed already; its error is what the requests get
  }
}

void Engine::drain_inbox(bool& stop) {
  Inbox work;
  {
    std::unique_lock lock(mutex_);
    if (!scheduler_->has_unfinished() && !in_flight_)
      wake_.wait(lock, [&] { return inbox_->stop || !inbox_->submits.empty() || !inbox_->cancels.empty(); });
    std::swap(work, *inbox_);
    inbox_->stop = work.stop;
    stats_.total_requests += static_cast<int64_t>(work.submits.size());
  }
  stop = work.stop;
  for (auto& s : work.submits) {
    auto st = std::make_unique<RequestState>(s.id, s.request.params, std::move(s.callback), s.seed);
    st->num_prompt = static_cast<int32_t>(s.request.prompt_ids.size());
    try {
      scheduler_->add(Sequence(s.id, std::move(s.request.prompt_ids), st->params.max_tokens,
                               stop_token_set(model_.eos_token_ids, st->params.ignore_eos, st->params.stop_token_ids)));
    } catch (const Error& e) {
      StreamEvent ev;
      ev.request_id = s.id;
      ev.finished = true;
      ev.reason = FinishReason::Error;
      ev.error = e.what();
      pending_.push_back({std::move(st->callback), std::move(ev)});
      continue;
    }
    requests_[s.id] = std::move(st);
  }
  for (int64_t id : work.cancels)
    if (requests_.contains(id)) finish_request(id, FinishReason::Cancelled, "");
  if (!pending_.empty()) {
    publish_stats(0, 0, 0);
    flush_events();
  }
}

void Engine::finish_request(int64_t id, FinishReason reason, const std::string& error) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  scheduler_->finish(id, reason);
  StreamEvent ev;
  ev.request_id = id;
  ev.finished = true;
  ev.reason = reason;
  ev.error = error;
  ev.num_prompt_tokens = it->second->num_prompt;
  ev.elapsed_s = std::chrono::duration<double>(Clock::now() - it->second->submitted).count();
  ev.time_to_first_token_s = std::max(it->second->ttft, 0.0);
  pending_.push_back({std::move(it->second->callback), std::move(ev)});
  requests_.erase(it);
}

void Engine::flush_events() {
  // Stats first, so a caller woken by a final event sees the engine's state after that step.
  std::vector<std::pair<StreamCallback, StreamEvent>> events;
  events.swap(pending_);
  std::vector<int64_t> misbehaving;
  for (auto& [cb, ev] : events) {
    try {
      cb(ev);
    } catch (...) {
      if (!ev.finished) misbehaving.push_back(ev.request_id);
    }
  }
  // A callback that throws loses its request, not the engine or the other requests.
  for (int64_t id : misbehaving) finish_request(id, FinishReason::Error, "the stream callback threw");
  if (!pending_.empty()) flush_events();
}

struct Engine::Launched {
  SchedulerOutput out;
  Tensor logits;                    // read by complete() unless the sampling was launched already
  std::vector<SampleRow> rows;      // device sampling, one per sampling row
  std::vector<int64_t> sample_ids;  // request of each sampling row, in row order
  bool sampling_launched = false;
  int64_t prompt_tokens = 0;
  Clock::time_point t0;
};

bool Engine::overlapping() const {
  return options_.overlap_steps && model_.backend->can_sample() && model_.backend->can_chain_steps();
}

bool Engine::can_chain(const Launched& l) const {
  if (!l.sampling_launched) return false;
  // A penalty needs the previous token among the sequence's outputs on the host.
  for (int64_t id : l.sample_ids) {
    auto it = requests_.find(id);
    if (it == requests_.end()) return false;  // finished meanwhile: the batch changes
    if (it->second->params.has_penalties()) return false;
  }
  return true;
}

Engine::Launched Engine::launch(SchedulerOutput out, Clock::time_point t0) {
  Launched l;
  l.out = std::move(out);
  l.t0 = t0;
  StepInput input = build_step_input(l.out);
  input.tokens_from_last_sample = l.out.tokens_from_previous;
  l.logits = model_.model->forward(*model_.backend, input);
  const bool on_device = model_.backend->can_sample();
  for (const ScheduledSeq& row : l.out.rows) {
    const Sequence* seq = scheduler_->find(row.id);
    if (seq) l.prompt_tokens += std::max(0, std::min(row.start + row.count, seq->num_prompt_tokens) - row.start);
    if (!row.sample) continue;
    l.sample_ids.push_back(row.id);
    if (!on_device) continue;
    const RequestState& st = *requests_.at(row.id);
    // A chained row's sequence does not hold the previous step's token yet: one more drawn.
    const uint64_t counter = seq->output().size() + (l.out.tokens_from_previous ? 1 : 0);
    l.rows.push_back(SampleRow{&st.params, st.seed, counter, seq->prompt(), seq->output()});
  }
  if (on_device && overlapping()) {
    model_.backend->sample_launch(sampling_view(l.logits), l.rows);
    l.sampling_launched = true;
  }
  return l;
}

Tensor Engine::sampling_view(const Tensor& logits) const {
  // The first sample_vocab_ columns (row stride unchanged): the device sampler never sees the rest.
  return sample_vocab_ < logits.cols ? logits.col_slice(0, sample_vocab_) : logits;
}

void Engine::step() {
  if (!in_flight_) {
    const auto t0 = Clock::now();
    SchedulerOutput out = scheduler_->schedule();
    for (const FinishedSeq& f : out.finished) finish_request(f.id, f.reason, f.message);
    if (out.empty()) {
      // Nothing could run although work is pending: fail the oldest waiting request so the engine
      // always makes progress (the scheduler already fails requests that can never fit).
      if (out.stalled && !scheduler_->waiting().empty())
        finish_request(scheduler_->waiting().front(), FinishReason::Error, out.stall_reason);
      publish_stats(0, 0, 0);
      flush_events();
      return;
    }
    in_flight_ = std::make_unique<Launched>(launch(std::move(out), t0));
  }
  // Overlap: while step N runs, launch N+1 for the same sequences (their tokens come from N's
  // sampling on the device), then handle N's tokens on the host.
  std::unique_ptr<Launched> next;
  if (can_chain(*in_flight_))
    if (auto ahead = scheduler_->schedule_ahead(in_flight_->out))
      next = std::make_unique<Launched>(launch(std::move(*ahead), Clock::now()));
  std::unique_ptr<Launched> cur = std::move(in_flight_);
  in_flight_ = std::move(next);
  complete(*cur);
}

void Engine::complete(Launched& l) {
  std::vector<TokenId> sampled;
  std::vector<std::pair<int64_t, GeneratedToken>> produced;
  if (l.sampling_launched || model_.backend->can_sample()) {
    if (l.sampling_launched)
      model_.backend->sample_collect(sampled_tokens_);
    else
      model_.backend->sample(sampling_view(l.logits), l.rows, sampled_tokens_);
    for (size_t i = 0; i < l.sample_ids.size(); ++i) {
      SampledToken& t = sampled_tokens_[i];
      sampled.push_back(t.token);
      produced.push_back({l.sample_ids[i], GeneratedToken{t.token, t.logprob, std::move(t.top)}});
    }
  } else {
    const size_t vocab = static_cast<size_t>(model_.config.vocab_size);
    host_logits_.resize(static_cast<size_t>(l.logits.rows) * vocab);
    model_.backend->to_host(l.logits, host_logits_.data());
    for (size_t i = 0; i < l.sample_ids.size(); ++i) {
      const Sequence* seq = scheduler_->find(l.sample_ids[i]);
      RequestState& st = *requests_.at(l.sample_ids[i]);
      const float* lg = host_logits_.data() + i * vocab;
      SampleResult r = sampler_.sample(std::span<const float>(lg, vocab), st.params, seq->prompt(), seq->output(),
                                       st.rng, *scratch_);
      sampled.push_back(r.token);
      produced.push_back({l.sample_ids[i], GeneratedToken{r.token, r.logprob, std::move(r.top)}});
    }
  }
  // Weights read from a model file that shrank on disk came back as zeros: these tokens are
  // garbage, so the step fails (run() fails its requests) and so does every later one.
  if (model_.folder) model_.folder->check_unchanged();
  // update() finishes the sequences whose token ends them (stop token or max_tokens).
  const std::vector<FinishedSeq> done = scheduler_->update(l.out, sampled);
  const auto now = Clock::now();
  int64_t delivered = 0;
  for (auto& [id, tok] : produced) {
    auto it = requests_.find(id);
    // Finished (stop token, cancelled) while this overlapped step ran: its token is dropped.
    if (it == requests_.end()) continue;
    RequestState& st = *it->second;
    ++delivered;
    if (st.ttft < 0) st.ttft = std::chrono::duration<double>(now - st.submitted).count();
    const auto fin = std::ranges::find(done, id, &FinishedSeq::id);
    StreamEvent ev;
    ev.request_id = id;
    ev.tokens.push_back(std::move(tok));
    ev.time_to_first_token_s = st.ttft;
    ev.elapsed_s = std::chrono::duration<double>(now - st.submitted).count();
    ev.num_prompt_tokens = st.num_prompt;
    if (fin != done.end()) {
      ev.finished = true;
      ev.reason = fin->reason;
      pending_.push_back({std::move(st.callback), std::move(ev)});
      requests_.erase(it);
    } else {
      pending_.push_back({st.callback, std::move(ev)});
    }
  }
  tracker_->record(now, l.prompt_tokens, delivered);
  publish_stats(std::chrono::duration<double>(now - l.t0).count(), l.prompt_tokens, delivered);
  flush_events();
}

void Engine::publish_stats(double step_seconds, int64_t prompt_tokens, int64_t generated) {
  const auto now = Clock::now();
  const KvCacheStats kv = kv_->stats();
  // Memory, RSS (a /proc read) and expert counters (a device read on GPU backends) are refreshed
  // at most every 100 ms, and always once the engine goes idle, outside the lock.
  const bool idle = !scheduler_->has_unfinished();
  const bool refresh = idle || now - last_slow_refresh_ >= std::chrono::milliseconds(100);
  MemoryInfo mem;
  int64_t rss = 0, peak = 0;
  std::vector<int64_t> experts;
  if (refresh) {
    last_slow_refresh_ = now;
    mem = model_.backend->memory_info();
    rss = process_rss_bytes();
    peak = process_peak_rss_bytes();
    if (model_.config.is_moe()) experts = model_.backend->expert_counts();
  }
  std::lock_guard lock(mutex_);
  stats_.decode_tokens_per_s = tracker_->decode_rate(now);
  stats_.prompt_tokens_per_s = tracker_->prompt_rate(now);
  stats_.total_generated_tokens += generated;
  stats_.total_prompt_tokens += prompt_tokens;
  stats_.running = scheduler_->num_running();
  stats_.waiting = scheduler_->num_waiting();
  stats_.kv_blocks_used = kv.blocks_used;
  stats_.kv_blocks_total = kv.blocks_total;
  stats_.prefix_cache_hit_rate = kv.hit_rate();
  stats_.steps = scheduler_->stats().steps;
  stats_.overlapped_steps = scheduler_->stats().steps_ahead;
  stats_.preemptions = scheduler_->stats().preemptions;
  stats_.last_step_ms = step_seconds * 1000.0;
  if (!refresh) return;
  stats_.memory = mem;
  stats_.process_rss_bytes = rss;
  stats_.process_peak_rss_bytes = peak;
  if (model_.config.is_moe()) {
    stats_.num_layers = static_cast<int32_t>(model_.config.num_hidden_layers);
    stats_.num_experts = static_cast<int32_t>(model_.config.num_experts);
    stats_.expert_counts = std::move(experts);
  }
}

}  // namespace inferdesk
