// Serving metrics with vLLM `bench serve`'s definitions, so figures of different engines compare:
// TTFT per request; TPOT = (latency - TTFT) / (output tokens - 1) for requests with more than one
// output token; ITL = every gap between content chunks; E2EL = latency; throughputs over the run's
// duration (first send to last response); mean / median / std (population) / percentiles
// (linear interpolation, numpy's default) in milliseconds; the peak output tokens/s over 1-second
// buckets of chunk arrivals. Goodput: completed requests whose TTFT, TPOT (0 for one-token
// replies) and E2EL are all within the SLOs given, per second. Output tokens: the server's usage,
// else the reply's text re-tokenized with the target's tokenizer, else the content chunks (each
// request says which); input tokens: the workload's prompt length, else the server's usage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bench/load_generator.h"

namespace inferdesk {
class Tokenizer;
}

namespace inferdesk::bench {

// vLLM's --goodput: milliseconds a good request stays within.
struct Slo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
};
// "ttft:500 tpot:50 e2el:2000" (any subset, spaces or commas between). Throws
// Error(InvalidArgument) naming the bad item.
Slo parse_goodput(const std::string& spec);

enum class TokenSource { Usage, Tokenizer, Chunks, None };
const char* to_string(TokenSource s);

struct SummaryOptions {
  std::vector<double> percents = {99};
  Slo slo;
  const Tokenizer* tokenizer = nullptr;  // re-tokenizes replies the server gave no usage for
};

// Each request's output length as the metrics count it (0 for failed ones), and where it came from.
std::vector<int64_t> output_lengths(const LoadResult& run, const Tokenizer* tok, std::vector<TokenSource>* sources);
// Each request's prompt length: the workload's, else the server's usage.
std::vector<int64_t> input_lengths(const LoadResult& run, const std::vector<BenchRequest>& requests);

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
  bool has_goodput = false;  // SLOs were given
  int64_t good_completed = 0;
  double request_goodput = 0;
  // How the completed requests' output tokens were counted.
  int64_t outputs_from_usage = 0, outputs_retokenized = 0, outputs_from_chunks = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms;
  std::vector<std::string> errors;  // the first few distinct ones
};

// percents: e.g. {50, 90, 99}.
BenchSummary summarize(const LoadResult& run, const std::vector<BenchRequest>& requests,
                       const std::vector<double>& percents = {99});
BenchSummary summarize(const LoadResult& run, const std::vector<BenchRequest>& requests, const SummaryOptions& o);
Distribution distribution(std::vector<double> values, const std::vector<double>& percents);
double percentile(std::vector<double> sorted_or_not, double percent);

// vLLM's result keys: "completed", "duration", "mean_ttft_ms", "p99_itl_ms", ...
nlohmann::ordered_json to_json(const BenchSummary& s);
// A table for people, as vLLM prints it.
std::string to_text(const BenchSummary& s);

}  // namespace inferdesk::bench
