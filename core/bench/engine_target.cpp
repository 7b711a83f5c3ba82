#include "core/bench/engine_target.h"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <nlohmann/json.hpp>

#include "core/engine/engine.h"
#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"

namespace inferdesk::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// A completions body as the engine's request; throws Error(InvalidArgument) with the reason.
Request to_engine_request(const BenchRequest& b, const Tokenizer* tok) {
  if (b.make_body) throw Error(ErrorCode::InvalidArgument, "the in-process target takes no multi-turn chats");
  const nlohmann::json j = nlohmann::json::parse(b.body, nullptr, false);
  if (!j.is_object()) throw Error(ErrorCode::InvalidArgument, "the request body is not a JSON object");
  if (j.contains("messages")) throw Error(ErrorCode::InvalidArgument, "the in-process target takes completions bodies");
  Request r;
  const auto& p = j.contains("prompt") ? j["prompt"] : nlohmann::json();
  if (p.is_array()) {
    for (const auto& id : p) {
      if (!id.is_number_integer()) throw Error(ErrorCode::InvalidArgument, "prompt ids must be integers");
      r.prompt_ids.push_back(id.get<int32_t>());
    }
  } else if (p.is_string() && tok) {
    r.prompt_ids = tok->encode(p.get<std::string>(), true);  // as a server tokenizes a text prompt
  } else {
    throw Error(ErrorCode::InvalidArgument, "the prompt must be token ids (or text, with a tokenizer)");
  }
  r.params.max_tokens = j.value("max_tokens", 16);
  r.params.temperature = j.value("temperature", 1.0f);
  r.params.ignore_eos = j.value("ignore_eos", false);
  if (j.contains("seed") && j["seed"].is_number_unsigned()) r.params.seed = j["seed"].get<uint64_t>();
  return r;
}

// Shared between the engine thread (callbacks) and the driving thread.
struct Shared {
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<size_t> ended;  // indices finished since the driver last looked
};

struct Live {
  RequestResult* result = nullptr;
  Clock::time_point sent, last;
  std::unique_ptr<IncrementalDecoder> decoder;
};

}  // namespace

LoadResult run_engine_load(Engine& engine, const Tokenizer* tok, const LoadOptions& o,
                           const std::vector<BenchRequest>& requests) {
  LoadResult out;
  out.requests.resize(requests.size());
  const std::vector<double> at = arrival_times(requests.size(), o.request_rate, o.burstiness, o.seed);
  std::vector<Live> live(requests.size());
  std::vector<int64_t> ids(requests.size(), -1);
  Shared shared;
  const auto start = Clock::now();
  out.started = start;
  size_t next = 0, done = 0;
  int32_t active = 0;
  auto finish_now = [&](size_t i) {  // a request that ends on this thread
    if (o.on_request_done) o.on_request_done(i, out.requests[i]);
    ++done;
  };
  auto send = [&](size_t i) {
    RequestResult& r = out.requests[i];
    Live& l = live[i];
    l.result = &r;
    if (tok) l.decoder = std::make_unique<IncrementalDecoder>(*tok, true);
    l.sent = Clock::now();
    r.start_s = seconds_between(start, l.sent);
    try {
      Request req = to_engine_request(requests[i], tok);
      ids[i] = engine.submit(std::move(req), [&, i](const StreamEvent& e) {
        const auto now = Clock::now();
        Live& x = live[i];
        RequestResult& res = *x.result;
        if (!e.tokens.empty()) {
          if (res.chunks == 0)
            res.ttft_s = seconds_between(x.sent, now);
          else
            res.itl_s.push_back(seconds_between(x.last, now));
          x.last = now;
          res.chunk_s.push_back(seconds_between(start, now));
          ++res.chunks;
          res.output_tokens += static_cast<int64_t>(e.tokens.size());
          if (x.decoder)
            for (const auto& t : e.tokens) res.text += x.decoder->push(t.id);
        }
        if (!e.finished) return;
        if (x.decoder) res.text += x.decoder->finish();
        res.prompt_tokens = e.num_prompt_tokens;
        res.latency_s = seconds_between(x.sent, now);
        res.finish_reason = e.reason == FinishReason::Length ? "length" : e.reason == FinishReason::Stop ? "stop" : "";
        if (e.reason == FinishReason::Cancelled) {
          res.cancelled = true;
          res.error = "cancelled";
        } else if (e.reason == FinishReason::Error) {
          res.error = e.error.empty() ? "engine error" : e.error;
        }
        res.success = res.error.empty();
        std::lock_guard lock(shared.mutex);
        shared.ended.push_back(i);
        shared.wake.notify_one();
      });
      ++active;
      out.max_concurrent = std::max(out.max_concurrent, active);
    } catch (const Error& e) {
      r.error = e.what();
      finish_now(i);
    }
  };
  bool cancelling = false;
  while (done < requests.size()) {
    if (!cancelling && o.cancel && o.cancel->load()) {
      cancelling = true;
      for (; next < requests.size(); ++next) {
        out.requests[next].cancelled = true;
        out.requests[next].error = "cancelled";
        finish_now(next);
      }
      for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] >= 0) engine.cancel(ids[i]);
    }
    const double now_s = seconds_between(start, Clock::now());
    while (!cancelling && next < requests.size() && at[next] <= now_s &&
           (o.max_concurrency <= 0 || active < o.max_concurrency))
      send(next++);
    std::vector<size_t> ended;
    {
      std::unique_lock lock(shared.mutex);
      double wait_s = 0.05;
      if (!cancelling && next < requests.size() && (o.max_concurrency <= 0 || active < o.max_concurrency))
        wait_s = std::clamp(at[next] - seconds_between(start, Clock::now()), 0.0, 0.05);
      shared.wake.wait_for(lock, std::chrono::duration<double>(wait_s), [&] { return !shared.ended.empty(); });
      ended.swap(shared.ended);
    }
    for (size_t i : ended) {
      ids[i] = -1;
      --active;
      finish_now(i);
    }
  }
  out.duration_s = seconds_between(start, Clock::now());
  return out;
}

Driver engine_driver(Engine& engine, const Tokenizer* tok) {
  return [&engine, tok](const LoadOptions& o, const std::vector<BenchRequest>& r) {
    return run_engine_load(engine, tok, o, r);
  };
}

}  // namespace inferdesk::bench
