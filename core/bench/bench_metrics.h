// Serving metrics with vLLM `bench serve`'s definitions, so figures of different engines compare:
// TTFT per request; TPOT = (latency - TTFT) / (output tokens - 1) for requests with more than one
// output token; ITL = every gap between content chunks; E2EL = latency; throughputs over the run's
// duration (first send to last response); mean / median / std (population) / percentiles
// (linear interpolation, numpy's default) in milliseconds; the peak output tokens/s over 1-second
// buckets of chunk arrivals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bench/load_generator.h"

namespace inferdesk::bench {

struct Distribution {
  double mean = 0, median = 0, std = 0;
  std::vector<std::pair<double, double>> percentiles;  // (percent, value)
};

struct BenchSummary {
  int64_t completed = 0, failed = 0, aborted = 0;
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  double duration_s = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  double max_output_tokens_per_s = 0;
  int32_t max_concurrent_requests = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms;
  std::vector<std::string> errors;  // the first few distinct ones
};

// percents: e.g. {50, 90, 99}.
BenchSummary summarize(const LoadResult& run, const std::vector<BenchRequest>& requests,
                       const std::vector<double>& percents = {99});
Distribution distribution(std::vector<double> values, const std::vector<double>& percents);
double percentile(std::vector<double> sorted_or_not, double percent);

// vLLM's result keys: "completed", "duration", "mean_ttft_ms", "p99_itl_ms", ...
nlohmann::ordered_json to_json(const BenchSummary& s);
// A table for people, as vLLM prints it.
std::string to_text(const BenchSummary& s);

}  // namespace inferdesk::bench
