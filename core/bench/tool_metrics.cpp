// The other tools' metrics from the raw timestamps (definitions: metric_definitions.cpp).
#include <algorithm>
#include <limits>

#include "core/bench/metric_definitions.h"

namespace inferdesk::bench {

namespace {

// Per-request values of one metric, skipping requests where it is undefined.
struct Series {
  std::map<std::string, std::vector<double>> values;
  void add(const std::string& id, double v) { values[id].push_back(v); }
};

// The last content chunk's time since the request was sent (the whole response when none).
double last_token_s(const RequestResult& r) {
  return r.chunk_s.empty() ? r.latency_s : r.chunk_s.back() - r.start_s;
}

void per_request(const RequestResult& r, int64_t out, Series& s) {
  const double e2e = r.latency_s, ttft = r.ttft_s, n = static_cast<double>(out);
  s.add("genai_perf.time_to_first_token", ttft * 1000);
  s.add("genai_perf.request_latency", e2e * 1000);
  s.add("genai_perf.output_sequence_length", n);
  if (out > 1) {
    const double itl = (e2e - ttft) / (n - 1);
    s.add("genai_perf.inter_token_latency", itl * 1000);
    if (itl > 0) s.add("genai_perf.output_token_throughput_per_user", 1.0 / itl);
  }
  s.add("llmperf.ttft_s", ttft);
  s.add("llmperf.end_to_end_latency_s", e2e);
  if (out > 0) s.add("llmperf.inter_token_latency_s", last_token_s(r) / n);
  if (e2e > 0) s.add("llmperf.request_output_throughput_token_per_s", n / e2e);
  s.add("guidellm.time_to_first_token_ms", ttft * 1000);
  s.add("guidellm.request_latency", e2e);
  if (out > 1) s.add("guidellm.inter_token_latency_ms", (last_token_s(r) - ttft) / (n - 1) * 1000);
  if (out > 0) s.add("guidellm.time_per_output_token_ms", last_token_s(r) / n * 1000);
  if (e2e > 0) s.add("guidellm.output_tokens_per_second", n / e2e);
}

}  // namespace

ToolMetrics tool_metrics(const LoadResult& run, const std::vector<int64_t>& output_lens,
                         const std::vector<double>& percents) {
  Series s;
  int64_t completed = 0, tokens = 0;
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RequestResult& r = run.requests[i];
    if (!r.success) continue;
    const int64_t out = i < output_lens.size() ? output_lens[i] : r.output_tokens;
    ++completed;
    tokens += out;
    first = std::min(first, r.start_s);
    last = std::max(last, r.start_s + r.latency_s);
    per_request(r, out, s);
  }
  ToolMetrics m;
  for (auto& [id, v] : s.values) m.distributions[id] = distribution(std::move(v), percents);
  const double span = completed > 0 ? last - first : 0;  // GenAI-Perf's duration
  if (span > 0) {
    m.figures["genai_perf.output_token_throughput"] = static_cast<double>(tokens) / span;
    m.figures["genai_perf.request_throughput"] = static_cast<double>(completed) / span;
  }
  if (run.duration_s > 0) {
    m.figures["llmperf.mean_output_throughput_token_per_s"] = static_cast<double>(tokens) / run.duration_s;
    m.figures["llmperf.num_completed_requests_per_min"] = static_cast<double>(completed) / run.duration_s * 60;
    m.figures["guidellm.requests_per_second"] = static_cast<double>(completed) / run.duration_s;
  }
  return m;
}

}  // namespace inferdesk::bench
