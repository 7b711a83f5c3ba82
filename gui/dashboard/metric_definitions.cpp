#include "gui/dashboard/metric_definitions.h"

namespace inferdesk::gui {

const std::vector<MetricDefinition>& dashboard_metric_definitions() {
  static const std::vector<MetricDefinition> table{
      {"ttft", "TTFT", "Time to first token: from sending a request to its first chunk carrying text."},
      {"tpot", "TPOT", "Time per output token, excluding the first: (latency - TTFT) / (output tokens - 1)."},
      {"itl", "ITL", "Inter-token latency: every gap between content chunks, pooled over all requests."},
      {"e2el", "E2E latency", "End-to-end latency: from sending a request to its last byte."},
      {"output_throughput", "Output tok/s", "Output tokens of all requests / the run's duration (first send to last response)."},
      {"request_throughput", "Requests/s", "Completed requests / the run's duration."},
      {"total_token_throughput", "Total tok/s", "Prompt + output tokens / the run's duration."},
      {"tok_s_over_time", "Tok/s over time", "Content chunks arriving in each 1-second bucket, counted as tokens."},
  };
  return table;
}

QString metric_definition(const QString& key) {
  for (const auto& d : dashboard_metric_definitions())
    if (d.key == key) return d.definition;
  return {};
}

}  // namespace inferdesk::gui
