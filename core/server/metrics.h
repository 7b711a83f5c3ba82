// ServerMetrics: the Prometheus counters and histograms of GET /metrics, named as vLLM names
// them (vllm:time_to_first_token_seconds, vllm:e2e_request_latency_seconds, ...; same buckets) so
// that dashboards and scrapers built for vLLM read ours unchanged. Gauges (running / waiting
// requests, KV-cache usage) come from the engine's stats at scrape time. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/engine/stats.h"

namespace inferdesk::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  // Appends the _bucket / _sum / _count lines (labels: the text inside {}, without braces).
  void render(std::string& out, const std::string& name, const std::string& labels) const;
  uint64_t count() const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), +Inf last
  double sum_ = 0;
  uint64_t total_ = 0;
};

// A finished request as the metrics see it.
struct FinishedRequest {
  std::string finish_reason;  // "stop" | "length" | "abort"
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  double e2e_s = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();

  void observe_ttft(double s) { ttft_.observe(s); }
  void observe_inter_token(double s) { tpot_.observe(s); }  // vLLM v1: one per engine output
  void observe_finished(const FinishedRequest& r);
  void count_http(int status);
  void count_generated(int64_t tokens) { generation_tokens_.fetch_add(tokens); }
  // Engine steps from a client's disconnect to its request's end (an upper bound while other
  // requests keep the engine stepping).
  void observe_cancel_steps(uint64_t steps) { cancel_steps_.observe(static_cast<double>(steps)); }

  // The whole exposition text. stats: the engine's snapshot (null when no engine: gauges 0).
  std::string render(const std::string& model_name, const EngineStats* stats, int64_t open_connections,
                     int64_t admitted) const;

  uint64_t finished(const std::string& reason) const;

 private:
  Histogram ttft_, tpot_, e2e_, prompt_len_, generation_len_, cancel_steps_;
  std::atomic<int64_t> prompt_tokens_{0}, generation_tokens_{0};
  std::array<std::atomic<uint64_t>, 3> success_{};  // stop, length, abort
  mutable std::mutex http_mutex_;
  std::vector<std::pair<int, uint64_t>> http_;  // status -> count
};

}  // namespace inferdesk::server
