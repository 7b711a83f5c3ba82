#include "core/server/generation_job.h"

#include <boost/asio/post.hpp>

#include "core/util/error.h"

namespace inferdesk::server {

GenerationJob::GenerationJob(std::shared_ptr<Server::Context> ctx, GenerationRequest request, ResponseMeta meta,
                             Clock::time_point received)
    : ctx_(std::move(ctx)),
      request_(std::move(request)),
      meta_(std::move(meta)),
      generation_(request_, ctx_->model.tokenizer ? &*ctx_->model.tokenizer : nullptr),
      received_(received) {
  const auto k = static_cast<size_t>(request_.num_choices());
  last_token_.resize(k);
  recorded_.assign(k, false);
  first_chunk_sent_.assign(k, false);
}

GenerationJob::~GenerationJob() {
  if (registry_id_) ctx_->remove_job(registry_id_);
}

void GenerationJob::submit(boost::asio::any_io_executor strand, std::function<void()> notify) {
  notify_ = std::move(notify);
  const int64_t k = num_choices();
  std::shared_ptr<Engine> engine = ctx_->model.engine.lock();
  if (!engine) {
    ctx_->admission.release(k);
    throw ApiError(503, "no model is loaded");
  }
  std::vector<Request> requests;
  std::vector<StreamCallback> callbacks;
  requests.reserve(static_cast<size_t>(k));
  callbacks.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    const PromptInput& p = request_.prompt_of(i);
    Request r{p.ids, request_.params};
    r.params.max_tokens = p.max_tokens;
    // As vLLM's parallel sampling: the k-th of n choices draws with seed + k.
    if (r.params.seed) *r.params.seed += static_cast<uint64_t>(i % request_.n);
    requests.push_back(std::move(r));
    // Engine thread: only post; the final event also gives the admission slot back.
    callbacks.push_back([self = shared_from_this(), strand, i](const StreamEvent& ev) {
      boost::asio::post(strand, [self, i, ev] { self->on_event(static_cast<int32_t>(i), ev); });
      if (ev.finished) {
        self->ctx_->admission.release(1);
        self->ctx_->engine_requests_finished(1);
      }
    });
  }
  ctx_->engine_requests_started(k);
  std::vector<int64_t> ids;
  try {
    ids = engine->submit_batch(std::move(requests), std::move(callbacks));
  } catch (const Error& e) {
    ctx_->engine_requests_finished(k);
    ctx_->admission.release(k);
    throw ApiError(400, e.what());
  }
  {
    std::lock_guard lock(ids_mutex_);
    ids_ = std::move(ids);
  }
  registry_id_ = ctx_->add_job(shared_from_this());
}

void GenerationJob::cancel_all() {
  std::vector<int64_t> ids;
  {
    std::lock_guard lock(ids_mutex_);
    ids = ids_;
  }
  if (ids.empty()) return;
  if (std::shared_ptr<Engine> engine = ctx_->model.engine.lock())
    for (int64_t id : ids) engine->cancel(id);
}

void GenerationJob::abandon() {
  if (abandoned_.exchange(true)) return;
  if (std::shared_ptr<Engine> engine = ctx_->model.engine.lock()) abandoned_at_step_ = engine->stats().steps;
  cancel_all();
}

std::vector<ChoiceDelta> GenerationJob::take_outbox() {
  std::vector<ChoiceDelta> out;
  out.swap(outbox_);
  return out;
}

bool GenerationJob::first_chunk_of(int32_t index) {
  const auto i = static_cast<size_t>(index);
  const bool first = !first_chunk_sent_[i];
  first_chunk_sent_[i] = true;
  return first;
}

void GenerationJob::fail(int status, std::string message) {
  if (failure_status_ != 0) return;
  failure_status_ = status;
  failure_message_ = std::move(message);
  cancel_all();
}

void GenerationJob::record_finished(int32_t index, Clock::time_point now) {
  const auto i = static_cast<size_t>(index);
  if (recorded_[i] || !generation_.output(i).done) return;
  recorded_[i] = true;
  const ChoiceOutput& o = generation_.output(i);
  FinishedRequest f;
  f.finish_reason = o.finish_reason;
  f.prompt_tokens = static_cast<int64_t>(request_.prompt_of(index).ids.size());
  f.generation_tokens = static_cast<int64_t>(o.tokens.size());
  f.e2e_s = std::chrono::duration<double>(now - received_).count();
  ctx_->metrics.observe_finished(f);
}

void GenerationJob::on_event(int32_t index, const StreamEvent& ev) {
  const auto now = Clock::now();
  const auto i = static_cast<size_t>(index);
  if (!ev.tokens.empty()) {
    ctx_->metrics.count_generated(static_cast<int64_t>(ev.tokens.size()));
    const double since = std::chrono::duration<double>(now - last_token_[i].value_or(received_)).count();
    if (last_token_[i])
      ctx_->metrics.observe_inter_token(since);
    else
      ctx_->metrics.observe_ttft(since);
    last_token_[i] = now;
  }
  Generation::Update u = generation_.apply(index, ev);
  if (u.cancel_engine) {
    std::shared_ptr<Engine> engine = ctx_->model.engine.lock();
    std::lock_guard lock(ids_mutex_);
    if (engine && i < ids_.size()) engine->cancel(ids_[i]);
  }
  if (ev.finished && abandoned_)
    if (std::shared_ptr<Engine> engine = ctx_->model.engine.lock())
      ctx_->metrics.observe_cancel_steps(engine->stats().steps - abandoned_at_step_.load());
  record_finished(index, now);
  if (!u.error.empty()) fail(500, u.error);
  if (u.cancelled && !abandoned_)
    fail(503, ctx_->draining ? "the server is shutting down: the request was cancelled"
                             : "the request was cancelled (the model was unloaded)");
  if (abandoned_) return;
  if (!u.delta.empty()) outbox_.push_back(std::move(u.delta));
  if (notify_) notify_();
}

}  // namespace inferdesk::server
