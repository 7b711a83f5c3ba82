// Every metric the dashboard can show, with one definition each, in one place: vLLM `bench
// serve`'s (what summarize() computes) and the other tools' (GenAI-Perf, llmperf, guidellm),
// which tool_metrics() computes from the same raw per-request timestamps so a run can be read
// the way each tool would have reported it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/bench/bench_metrics.h"

namespace inferdesk::bench {

struct MetricDefinition {
  std::string id;    // "vllm.ttft", "genai_perf.inter_token_latency", ...
  std::string tool;  // "vLLM", "GenAI-Perf", "llmperf", "guidellm"
  std::string name;  // for people
  std::string unit;  // "ms", "s", "tok/s", "req/s", "tok/s/user"
  std::string definition;
  bool per_request = false;  // a distribution over requests (else one figure for the run)
};

const std::vector<MetricDefinition>& metric_definitions();
const MetricDefinition* find_metric(const std::string& id);

struct ToolMetrics {
  std::map<std::string, Distribution> distributions;  // per-request metrics, by id
  std::map<std::string, double> figures;              // run-wide metrics, by id
};

// The GenAI-Perf, llmperf and guidellm metrics of a run (ids as in metric_definitions()).
// output_lens: as output_lengths() counts them.
ToolMetrics tool_metrics(const LoadResult& run, const std::vector<int64_t>& output_lens,
                         const std::vector<double>& percents);

}  // namespace inferdesk::bench
