// One entry point for a whole benchmark: warm-up requests (not measured), then one run per load
// point of a sweep (a list of concurrencies, a list of request rates, or guidellm's sweep:
// a synchronous run, a throughput run at the concurrency cap, then rates evenly spaced between
// the two measured request rates, the synchronous one excluded), each summarized with vLLM's
// definitions. The same request list is sent at every point and to every target: a driver is
// run_load (any OpenAI-compatible server) or the in-process engine (engine_target.h).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "core/bench/bench_metrics.h"
#include "core/bench/load_generator.h"

namespace inferdesk::bench {

using Driver = std::function<LoadResult(const LoadOptions&, const std::vector<BenchRequest>&)>;
Driver http_driver();  // run_load

struct Sweep {
  enum class Kind { None, Concurrency, Rate, Guidellm };
  Kind kind = Kind::None;
  std::vector<double> values;        // concurrencies or rates
  int32_t guidellm_points = 10;      // guidellm's sweep_size: synchronous + throughput + the rates
  int32_t guidellm_max_concurrency = 512;
};
// "concurrency:1,4,16", "rate:1,2.5,10", "guidellm" or "guidellm:N". Throws
// Error(InvalidArgument) naming what is wrong.
Sweep parse_sweep(const std::string& spec);

struct BenchmarkSpec {
  LoadOptions load;  // the point's rate / concurrency replace these where a sweep sets them
  Sweep sweep;
  SummaryOptions summary;
  int32_t warmup = 0;  // the first requests of the list sent first, one at a time, not measured
};

struct PointResult {
  std::string label;  // "concurrency 4", "rate 2.5", "synchronous", "throughput"
  double request_rate = 0;
  double burstiness = 1;
  int32_t max_concurrency = 0;
  LoadResult run;
  BenchSummary summary;
};

struct BenchmarkProgress {
  size_t point = 0, points = 0;  // this point's index and how many there are
  size_t done = 0, total = 0;    // requests ended at this point, and sent at it
  size_t index = 0;              // the request that just ended
  const RequestResult* result = nullptr;
};
using ProgressCallback = std::function<void(const BenchmarkProgress&)>;

// Cancel (any thread) stops the point in flight and skips the rest; the points run so far are
// returned. Runs on the calling thread; progress is called there.
std::vector<PointResult> run_benchmark(const Driver& driver, const std::vector<BenchRequest>& requests,
                                       const BenchmarkSpec& spec, const ProgressCallback& progress = {},
                                       const std::atomic<bool>* cancel = nullptr);

// Rates guidellm's sweep runs between a synchronous and a throughput rate: `points - 2` rates
// evenly spaced from sync to max, sync itself left out.
std::vector<double> guidellm_rates(double sync_rate, double max_rate, int32_t points);

}  // namespace inferdesk::bench
