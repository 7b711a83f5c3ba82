// Engine statistics: a snapshot type for callers and the tracker the engine thread updates.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/backend/backend.h"

namespace inferdesk {

struct EngineStats {
  double decode_tokens_per_s = 0;  // generated tokens per second over the last ~2 s
  double prompt_tokens_per_s = 0;  // prompt tokens computed per second over the last ~2 s
  int64_t total_generated_tokens = 0;
  int64_t total_prompt_tokens = 0;
  int64_t total_requests = 0;
  int32_t running = 0;
  int32_t waiting = 0;
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_total = 0;
  double prefix_cache_hit_rate = 0;  // cached prompt tokens / prompt tokens looked up
  uint64_t steps = 0;
  uint64_t overlapped_steps = 0;  // of `steps`, launched before the previous step's tokens came back
  uint64_t preemptions = 0;
  double last_step_ms = 0;
  // The figures below are refreshed at most every 100 ms while busy, and when the engine idles.
  // The backend's buffers; device_* only on device backends (0 on the CPU, whose memory is the
  // process's: process_rss_bytes).
  MemoryInfo memory;
  int64_t process_rss_bytes = 0;
  int64_t process_peak_rss_bytes = 0;
  // Routed tokens per (layer, expert), cumulative; empty for dense models.
  int32_t num_layers = 0;
  int32_t num_experts = 0;
  std::vector<int64_t> expert_counts;
};

// Sliding-window throughput; engine thread only.
class StatsTracker {
 public:
  using Clock = std::chrono::steady_clock;
  void record(Clock::time_point t, int64_t prompt_tokens, int64_t generated_tokens);
  double prompt_rate(Clock::time_point now) const { return rate(now, true); }
  double decode_rate(Clock::time_point now) const { return rate(now, false); }

 private:
  struct Sample {
    Clock::time_point t;
    int64_t prompt;
    int64_t generated;
  };
  double rate(Clock::time_point now, bool prompt) const;
  void trim(Clock::time_point now);
  std::deque<Sample> window_;
};

// Resident set size of this process now and at its peak, in bytes (0 where unknown).
int64_t process_rss_bytes();
int64_t process_peak_rss_bytes();

}  // namespace inferdesk
