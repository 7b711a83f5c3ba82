#include "core/bench/metric_definitions.h"

namespace inferdesk::bench {

namespace {

// Each line: id, tool, name, unit, definition, per request. Words are ours; the sources of each
// definition are the tools' own metric code (vLLM benchmarks/serve.py, GenAI-Perf llm_metrics,
// llmperf token_benchmark_ray.py, guidellm schemas/request_stats.py).
std::vector<MetricDefinition> make_table() {
  return {
      {"vllm.ttft", "vLLM", "Time to first token", "ms", "From sending the request to the first chunk that carries text or tokens.", true},
      {"vllm.tpot", "vLLM", "Time per output token", "ms", "(E2E latency - TTFT) / (output tokens - 1), for requests of two or more output tokens.", true},
      {"vllm.itl", "vLLM", "Inter-token latency", "ms", "Every gap between two consecutive content chunks, of all requests pooled.", true},
      {"vllm.e2el", "vLLM", "End-to-end latency", "ms", "From sending the request to the last byte of its response.", true},
      {"vllm.request_throughput", "vLLM", "Request throughput", "req/s", "Completed requests / benchmark duration (first send to last response).", false},
      {"vllm.request_goodput", "vLLM", "Request goodput", "req/s", "Completed requests within every given SLO (TTFT, TPOT, E2EL) / duration.", false},
      {"vllm.output_throughput", "vLLM", "Output token throughput", "tok/s", "Output tokens of completed requests (usage, else re-tokenized) / duration.", false},
      {"vllm.total_token_throughput", "vLLM", "Total token throughput", "tok/s", "(Prompt tokens + output tokens) of completed requests / duration.", false},
      {"vllm.max_output_tokens_per_s", "vLLM", "Peak output throughput", "tok/s", "The most content chunks that arrived within one whole second of the run.", false},
      {"genai_perf.time_to_first_token", "GenAI-Perf", "Time to first token", "ms", "From sending the request to its first response chunk.", true},
      {"genai_perf.inter_token_latency", "GenAI-Perf", "Inter-token latency", "ms", "Per request: (request latency - TTFT) / (output tokens - 1).", true},
      {"genai_perf.request_latency", "GenAI-Perf", "Request latency", "ms", "From sending the request to its last response.", true},
      {"genai_perf.output_sequence_length", "GenAI-Perf", "Output sequence length", "tokens", "Output tokens of each request.", true},
      {"genai_perf.output_token_throughput_per_user", "GenAI-Perf", "Output token throughput per user", "tok/s/user", "Per request: 1 / its inter-token latency.", true},
      {"genai_perf.output_token_throughput", "GenAI-Perf", "Output token throughput", "tok/s", "All output tokens / (last response - first request sent).", false},
      {"genai_perf.request_throughput", "GenAI-Perf", "Request throughput", "req/s", "Completed requests / (last response - first request sent).", false},
      {"llmperf.ttft_s", "llmperf", "Time to first token", "s", "From sending the request to the first streamed chunk.", true},
      {"llmperf.inter_token_latency_s", "llmperf", "Inter-token latency", "s", "Per request: the sum of all chunk gaps counted from the send (so TTFT included) / output tokens.", true},
      {"llmperf.end_to_end_latency_s", "llmperf", "End-to-end latency", "s", "From sending the request to the end of its response.", true},
      {"llmperf.request_output_throughput_token_per_s", "llmperf", "Output throughput per request", "tok/s", "Per request: output tokens / end-to-end latency.", true},
      {"llmperf.mean_output_throughput_token_per_s", "llmperf", "Overall output throughput", "tok/s", "All output tokens / the whole run's wall time.", false},
      {"llmperf.num_completed_requests_per_min", "llmperf", "Completed requests per minute", "req/min", "Completed requests / the whole run's wall time, in minutes.", false},
      {"guidellm.time_to_first_token_ms", "guidellm", "Time to first token", "ms", "From the request's start to its first token iteration.", true},
      {"guidellm.inter_token_latency_ms", "guidellm", "Inter-token latency", "ms", "Per request: (last token - first token) / (output tokens - 1).", true},
      {"guidellm.time_per_output_token_ms", "guidellm", "Time per output token", "ms", "Per request: (last token - request start) / output tokens (TTFT included).", true},
      {"guidellm.request_latency", "guidellm", "Request latency", "s", "From the request's start to its end.", true},
      {"guidellm.output_tokens_per_second", "guidellm", "Output tokens per second", "tok/s", "Per request: output tokens / request latency.", true},
      {"guidellm.requests_per_second", "guidellm", "Requests per second", "req/s", "Completed requests / benchmark duration.", false},
  };
}

}  // namespace

const std::vector<MetricDefinition>& metric_definitions() {
  static const std::vector<MetricDefinition> table = make_table();  // immutable, built once
  return table;
}

const MetricDefinition* find_metric(const std::string& id) {
  for (const auto& d : metric_definitions())
    if (d.id == id) return &d;
  return nullptr;
}

}  // namespace inferdesk::bench
