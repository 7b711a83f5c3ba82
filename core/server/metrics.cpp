#include "core/server/metrics.h"

#include <algorithm>
#include <charconv>

namespace inferdesk::server {

namespace {

// Shortest text that reads back as v ("0.005", not "0.0050000000000000001").
std::string num(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// vLLM's build_1_2_5_buckets for token counts.
std::vector<double> buckets_1_2_5(double max_value) {
  std::vector<double> out;
  for (double scale = 1;; scale *= 10)
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * scale > max_value) return out;
      out.push_back(m * scale);
    }
}

void head(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += " ";
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += " ";
  out += type;
  out += "\n";
}

void sample(std::string& out, const char* name, const std::string& labels, double v) {
  out += name;
  out += "{" + labels + "} " + num(v) + "\n";
}

constexpr const char* kReasons[] = {"stop", "length", "abort"};

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  std::lock_guard lock(mutex_);
  ++counts_[i];
  sum_ += v;
  ++total_;
}

uint64_t Histogram::count() const {
  std::lock_guard lock(mutex_);
  return total_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::lock_guard lock(mutex_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? num(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum{" + labels + "} " + num(sum_) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(total_) + "\n";
}

ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
             1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      tpot_(
          {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}),
      e2e_({0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
            30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}),
      prompt_len_(buckets_1_2_5(1 << 20)),
      generation_len_(buckets_1_2_5(1 << 20)),
      cancel_steps_({0, 1, 2, 4, 8, 16, 64}) {}

void ServerMetrics::observe_finished(const FinishedRequest& r) {
  for (size_t i = 0; i < 3; ++i)
    if (r.finish_reason == kReasons[i]) success_[i].fetch_add(1);
  prompt_tokens_.fetch_add(r.prompt_tokens);
  e2e_.observe(r.e2e_s);
  prompt_len_.observe(static_cast<double>(r.prompt_tokens));
  generation_len_.observe(static_cast<double>(r.generation_tokens));
}

uint64_t ServerMetrics::finished(const std::string& reason) const {
  for (size_t i = 0; i < 3; ++i)
    if (reason == kReasons[i]) return success_[i].load();
  return 0;
}

void ServerMetrics::count_http(int status) {
  std::lock_guard lock(http_mutex_);
  for (auto& [s, n] : http_)
    if (s == status) {
      ++n;
      return;
    }
  http_.push_back({status, 1});
}

std::string ServerMetrics::render(const std::string& model_name, const EngineStats* st, int64_t open_connections,
                                  int64_t admitted) const {
  // Label values escape \, " and newlines as the text format requires.
  std::string name;
  for (char c : model_name) {
    if (c == '\\' || c == '"') name += '\\';
    if (c == '\n') {
      name += "\\n";
      continue;
    }
    name += c;
  }
  const std::string labels = "model_name=\"" + name + "\",engine=\"0\"";
  std::string out;
  out.reserve(8192);
  const double usage = st && st->kv_blocks_total > 0 ? static_cast<double>(st->kv_blocks_used) / st->kv_blocks_total
                                                     : 0.0;
  head(out, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
  sample(out, "vllm:num_requests_running", labels, st ? st->running : 0);
  head(out, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
  sample(out, "vllm:num_requests_waiting", labels, st ? st->waiting : 0);
  head(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
  sample(out, "vllm:kv_cache_usage_perc", labels, usage);
  head(out, "vllm:gpu_cache_usage_perc", "gauge",
       "KV-cache usage. 1 means 100 percent usage. DEPRECATED: Use vllm:kv_cache_usage_perc instead.");
  sample(out, "vllm:gpu_cache_usage_perc", labels, usage);
  head(out, "vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.");
  sample(out, "vllm:num_preemptions_total", labels, st ? static_cast<double>(st->preemptions) : 0);
  head(out, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
  sample(out, "vllm:prompt_tokens_total", labels, static_cast<double>(prompt_tokens_.load()));
  head(out, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
  sample(out, "vllm:generation_tokens_total", labels, static_cast<double>(generation_tokens_.load()));
  head(out, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
  for (size_t i = 0; i < 3; ++i)
    sample(out, "vllm:request_success_total", labels + ",finished_reason=\"" + kReasons[i] + "\"",
           static_cast<double>(success_[i].load()));
  head(out, "vllm:request_prompt_tokens", "histogram", "Number of prefill tokens processed.");
  prompt_len_.render(out, "vllm:request_prompt_tokens", labels);
  head(out, "vllm:request_generation_tokens", "histogram", "Number of generation tokens processed.");
  generation_len_.render(out, "vllm:request_generation_tokens", labels);
  head(out, "vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.");
  ttft_.render(out, "vllm:time_to_first_token_seconds", labels);
  head(out, "vllm:time_per_output_token_seconds", "histogram", "Histogram of time per output token in seconds.");
  tpot_.render(out, "vllm:time_per_output_token_seconds", labels);
  head(out, "vllm:e2e_request_latency_seconds", "histogram", "Histogram of e2e request latency in seconds.");
  e2e_.render(out, "vllm:e2e_request_latency_seconds", labels);
  // Server-side figures vLLM has no name for.
  head(out, "inferdesk:kv_blocks_used", "gauge", "KV-cache blocks referenced by a sequence.");
  sample(out, "inferdesk:kv_blocks_used", labels, st ? st->kv_blocks_used : 0);
  head(out, "inferdesk:cancel_steps", "histogram",
       "Engine steps from a client's disconnect to the end of its request (upper bound under load).");
  cancel_steps_.render(out, "inferdesk:cancel_steps", labels);
  head(out, "inferdesk:open_connections", "gauge", "HTTP connections open now.");
  sample(out, "inferdesk:open_connections", labels, static_cast<double>(open_connections));
  head(out, "inferdesk:admitted_requests", "gauge", "Engine requests admitted and not finished.");
  sample(out, "inferdesk:admitted_requests", labels, static_cast<double>(admitted));
  head(out, "inferdesk:http_responses_total", "counter", "HTTP responses by status code.");
  std::lock_guard lock(http_mutex_);
  for (const auto& [status, n] : http_)
    sample(out, "inferdesk:http_responses_total", labels + ",code=\"" + std::to_string(status) + "\"",
           static_cast<double>(n));
  return out;
}

}  // namespace inferdesk::server
