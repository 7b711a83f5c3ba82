#include "core/engine/generate.h"

#include <condition_variable>
#include <mutex>

#include "core/util/error.h"

namespace inferdesk {

std::vector<int32_t> GenerationResult::token_ids() const {
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (const auto& t : tokens) ids.push_back(t.id);
  return ids;
}

std::vector<GenerationResult> generate_all(Engine& engine, std::vector<Request> requests) {
  std::vector<GenerationResult> results(requests.size());
  std::mutex m;
  std::condition_variable done_cv;
  size_t pending = requests.size();
  auto callback = [&](size_t i) {
    return [&, i](const StreamEvent& ev) {
      std::lock_guard lock(m);
      GenerationResult& r = results[i];
      for (const auto& t : ev.tokens) {
        r.tokens.push_back(t);
        r.token_times_s.push_back(ev.elapsed_s);
      }
      r.time_to_first_token_s = ev.time_to_first_token_s;
      r.elapsed_s = ev.elapsed_s;
      if (ev.finished) {
        r.reason = ev.reason;
        r.error = ev.error;
        --pending;
        done_cv.notify_all();
      }
    };
  };
  // All at once when every request is valid (the batches then do not depend on timing);
  // otherwise one by one, so a bad request fails alone.
  bool queued = false;
  try {
    std::vector<StreamCallback> callbacks;
    for (size_t i = 0; i < requests.size(); ++i) callbacks.push_back(callback(i));
    engine.submit_batch(requests, std::move(callbacks));
    queued = true;
  } catch (const Error&) {
  }
  for (size_t i = 0; !queued && i < requests.size(); ++i) {
    try {
      engine.submit(std::move(requests[i]), callback(i));
    } catch (const Error& e) {
      std::lock_guard lock(m);
      results[i].reason = FinishReason::Error;
      results[i].error = e.what();
      --pending;
    }
  }
  std::unique_lock lock(m);
  done_cv.wait(lock, [&] { return pending == 0; });
  return results;
}

}  // namespace inferdesk
