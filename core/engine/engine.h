// Engine: owns the engine thread, the loaded model, the KV cache and the scheduler.
// Callers on any thread submit requests and receive streamed tokens through a callback that runs
// on the engine thread. The threading contract is written down in CONTRACT.md beside this file.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/model_loader.h"
#include "core/engine/stats.h"
#include "core/sample/sampler.h"
#include "core/sample/sampling_params.h"
#include "core/sched/scheduler.h"

namespace inferdesk {

struct EngineOptions {
  int32_t block_size = 16;
  int32_t num_kv_blocks = 0;  // > 0: exactly this many blocks
  // Otherwise as many blocks as fit in kv_cache_bytes; 0 = automatic: 1 GiB on the CPU, and on a
  // backend that manages device memory whatever is left of gpu_memory_utilization x the device
  // after weights and activations (a non-zero kv_cache_bytes then caps it).
  int64_t kv_cache_bytes = 0;
  double gpu_memory_utilization = 0.90;
  // Fp8: K/V stored as E4M3 with the checkpoint's per-layer scales (1.0 without them): half the
  // bytes of BF16, so twice the tokens fit and long-context decode reads less. Auto: the backend's
  // activation precision.
  KvCacheDtype kv_cache_dtype = KvCacheDtype::Auto;
  int32_t max_model_len = 0;  // 0: the model's max_position_embeddings
  bool enable_prefix_caching = true;
  // Overlapped decode steps (vLLM's async scheduling): on a backend that samples on the device and
  // can chain steps (Backend::can_chain_steps), a decode step whose sequences all continue is
  // launched before the previous step's tokens reach the host, which then handles those tokens
  // (stop checks, events, callbacks) while the GPU runs. A sequence that stops on such a token
  // costs one discarded row of the next step. Off where the backend cannot chain (the CPU) and for
  // steps with sampling penalties (they need the previous token on the host). On by default: it
  // hides the host's work between decode steps (docs/PERF.md).
  bool overlap_steps = true;
  // > 0: ids at or above it are never sampled, on the CPU and on the device (the tokenizer's size:
  // a config vocab_size padded beyond the tokenizer, common in real checkpoints, would otherwise
  // produce ids nothing can decode). 0: every id below the model's vocab_size. At most vocab_size.
  int32_t sample_vocab = 0;
  SchedulerConfig scheduler;
};

struct Request {
  std::vector<int32_t> prompt_ids;
  SamplingParams params;
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;  // params.logprobs best tokens, best first
};

// One callback invocation: tokens generated since the previous event, and whether the request
// has finished (then `reason` and, for errors, `error` are set).
struct StreamEvent {
  int64_t request_id = 0;
  std::vector<GeneratedToken> tokens;
  bool finished = false;
  FinishReason reason = FinishReason::None;
  std::string error;
  double time_to_first_token_s = 0;  // set once the first token exists
  double elapsed_s = 0;              // since submit
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_prompt_tokens = 0;
};

using StreamCallback = std::function<void(const StreamEvent&)>;

class Engine {
 public:
  // Takes the loaded model, sizes and allocates the KV cache, starts the engine thread.
  // Throws OutOfMemory when the KV budget holds no block at all.
  Engine(LoadedModel model, EngineOptions options);
  ~Engine();  // cancels everything still running and joins the thread
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates the request (sampling params, token ids < vocab, prompt length) and queues it.
  // Throws Error(InvalidArgument) on a bad request. Thread-safe.
  int64_t submit(Request request, StreamCallback callback);
  // Validates every request first (throws Error(InvalidArgument) for the first bad one, and then
  // queues none), then queues them all at once: the engine thread sees them together, so the
  // steps they run in do not depend on how fast the caller submits (reproducible batches, e.g.
  // generate_all). Returns the ids in order. Thread-safe. requests.size() == callbacks.size().
  std::vector<int64_t> submit_batch(std::vector<Request> requests, std::vector<StreamCallback> callbacks);
  // Cancels a queued or running request; its callback then gets its final event (Cancelled).
  // Cancelling a request that already finished does nothing. Returns false for an id this engine
  // never issued. Thread-safe, never blocks on a step.
  bool cancel(int64_t request_id);
  // A consistent snapshot of the engine's counters. Thread-safe.
  EngineStats stats() const;

  const ModelConfig& model_config() const { return model_.config; }
  const LoadedModel& model() const { return model_; }
  int32_t num_kv_blocks() const { return num_blocks_; }
  int32_t max_model_len() const { return max_model_len_; }
  // The ids sampling may produce: [0, sample_vocab()).
  int32_t sample_vocab() const { return sample_vocab_; }

 private:
  struct RequestState;
  struct Inbox;
  // submit()'s validation; clamps max_tokens to the context. Returns the request's seed.
  uint64_t validate(Request& request) const;
  void run();
  void drain_inbox(bool& stop);
  void step();
  // A step whose forward (and, when overlapping, sampling) is enqueued on the backend.
  struct Launched;
  bool overlapping() const;
  bool can_chain(const Launched& l) const;
  Launched launch(SchedulerOutput out, std::chrono::steady_clock::time_point t0);
  void complete(Launched& l);                        // samples or collects, applies the tokens, delivers events
  Tensor sampling_view(const Tensor& logits) const;  // the columns the device sampler may pick
  // Forgets the launched steps (a failed step, or stopping): scheduler and backend.
  void drop_launched_steps();
  void finish_request(int64_t id, FinishReason reason, const std::string& error);
  void publish_stats(double step_seconds, int64_t prompt_tokens, int64_t generated);
  void flush_events();  // delivers pending_ (engine thread, no lock held)

  LoadedModel model_;
  EngineOptions options_;
  int32_t num_blocks_ = 0;
  int32_t max_model_len_ = 0;
  int32_t sample_vocab_ = 0;
  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<StatsTracker> tracker_;  // engine thread only
  std::vector<float> host_logits_;
  std::vector<SampledToken> sampled_tokens_;
  Sampler sampler_;
  std::unique_ptr<SamplerScratch> scratch_;                    // reused across steps (engine thread only)
  std::chrono::steady_clock::time_point last_slow_refresh_{};  // see publish_stats
  std::unique_ptr<Launched> in_flight_;                        // overlap: the launched step not yet completed

  // Engine-thread state.
  std::unordered_map<int64_t, std::unique_ptr<RequestState>> requests_;
  std::vector<std::pair<StreamCallback, StreamEvent>> pending_;  // events of the current step

  // Shared with callers (guarded by mutex_).
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::unique_ptr<Inbox> inbox_;
  EngineStats stats_;
  std::atomic<int64_t> next_id_{1};
  std::thread thread_;
};

}  // namespace inferdesk
