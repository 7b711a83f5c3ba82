// Internal to core/server: one chat or completions request in flight. It submits the request's
// choices to the engine, receives their events on the connection's strand (the engine callback
// only posts them there), keeps the Generation, the metrics and the admission slots, and queues
// what the connection has to send. It outlives its connection when the client goes away, until
// the engine has delivered every final event.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "core/server/generation.h"
#include "core/server/openai_format.h"
#include "core/server/server_context.h"

namespace inferdesk::server {

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  using Clock = std::chrono::steady_clock;
  GenerationJob(std::shared_ptr<Server::Context> ctx, GenerationRequest request, ResponseMeta meta,
                Clock::time_point received);
  ~GenerationJob();

  // Submits every choice at once (one engine step sees them together). Events are handled on
  // `strand`, then `notify` runs there. The caller holds num_choices() admission slots; each is
  // released as its engine request finishes. Throws ApiError: 503 without an engine, 400 when
  // the engine refuses the request (then the slots are released already).
  void submit(boost::asio::any_io_executor strand, std::function<void()> notify);
  // Cancels every engine request of this job. Thread-safe; does nothing for finished ones.
  void cancel_all();
  // The connection is gone: nothing is sent any more; cancel.
  void abandon();

  // Strand only.
  std::vector<ChoiceDelta> take_outbox();
  bool first_chunk_of(int32_t index);  // true the first time it is asked for a choice
  bool done() const { return generation_.done(); }
  int failure_status() const { return failure_status_; }  // 0: none
  const std::string& failure_message() const { return failure_message_; }
  Usage usage() const { return {generation_.prompt_tokens(), generation_.completion_tokens()}; }
  const Generation& generation() const { return generation_; }
  const GenerationRequest& request() const { return request_; }
  const ResponseMeta& meta() const { return meta_; }
  int64_t num_choices() const { return request_.num_choices(); }

 private:
  void on_event(int32_t index, const StreamEvent& ev);  // strand
  void record_finished(int32_t index, Clock::time_point now);
  void fail(int status, std::string message);

  std::shared_ptr<Server::Context> ctx_;
  const GenerationRequest request_;
  const ResponseMeta meta_;
  Generation generation_;
  const Clock::time_point received_;
  uint64_t registry_id_ = 0;

  std::mutex ids_mutex_;  // ids_ are written on the strand, read by cancel_all from anywhere
  std::vector<int64_t> ids_;
  std::atomic<bool> abandoned_{false};
  std::atomic<uint64_t> abandoned_at_step_{0};  // the engine's step count when the client left

  // Strand only.
  std::function<void()> notify_;
  std::vector<ChoiceDelta> outbox_;
  std::vector<std::optional<Clock::time_point>> last_token_;
  std::vector<bool> recorded_, first_chunk_sent_;
  int failure_status_ = 0;
  std::string failure_message_;
};

}  // namespace inferdesk::server
