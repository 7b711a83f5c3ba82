// One entry point for a whole benchmark: warm-up requests (not measured), then one run per load
// point of a sweep (a list of concurrencies, a list of request rates, or guidellm's sweep:
// a synchronous run, a throughput run at the concurrency cap, then rates evenly spaced between
// the two measured request rates, the synchronous one excluded), each summarized with vLLM's
// definitions. Each point (and the warm-up) sends prompts of its own, drawn from a RequestSource,
// so a server's prefix cache never serves one point a prompt an earlier point sent; the same seed
// gives the same prompts on every target. A driver is run_load (any OpenAI-compatible server) or
// the in-process engine (engine_target.h).
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

// The prompts of one point, or of the warm-up.
struct RequestSet {
  std::vector<BenchRequest> requests;
  uint64_t prompt_seed = 0;  // the seed they were drawn with (kept in the result files)
  std::string note;          // why prompts repeat, when they do (a dataset file too small); "" else
};
constexpr int32_t kWarmupPoint = -1;
// Called once per point, in order (0, 1, ...), and with kWarmupPoint for the warm-up.
using RequestSource = std::function<RequestSet(int32_t point)>;

// The seed of a point's prompts: a splitmix64 mix of (seed, point), so points never share a
// stream and a seed names the same prompts everywhere.
uint64_t point_seed(uint64_t seed, int32_t point);
// A workload generator: `count` requests drawn with `seed`.
using DrawRequests = std::function<std::vector<BenchRequest>(uint64_t seed, int32_t count)>;
// Each point's prompts: make(point_seed(seed, point), per_point); the warm-up's: `warmup` of them.
RequestSource seeded_source(uint64_t seed, int32_t per_point, int32_t warmup, DrawRequests make);
// For a fixed pool (a dataset file, shuffled once by `seed`): the warm-up takes the first `warmup`
// requests, point p the next `per_point` after those of point p - 1. A pool too small wraps
// around, and the RequestSet's note says prompts repeat.
RequestSource pool_source(std::vector<BenchRequest> pool, int32_t per_point, int32_t warmup, uint64_t seed);
// The points a sweep runs (guidellm: at most; it stops early when nothing succeeds).
size_t point_count(const Sweep& s);

struct BenchmarkSpec {
  LoadOptions load;  // the point's rate / concurrency replace these where a sweep sets them
  Sweep sweep;
  SummaryOptions summary;
  int32_t warmup = 0;  // requests of the warm-up set sent first, one at a time, not measured
};

struct PointResult {
  std::string label;  // "concurrency 4", "rate 2.5", "synchronous", "throughput"
  double request_rate = 0;
  double burstiness = 1;
  int32_t max_concurrency = 0;
  std::vector<BenchRequest> requests;  // what this point sent
  uint64_t prompt_seed = 0;
  std::string prompt_note;  // RequestSet::note
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
std::vector<PointResult> run_benchmark(const Driver& driver, const RequestSource& source, const BenchmarkSpec& spec,
                                       const ProgressCallback& progress = {},
                                       const std::atomic<bool>* cancel = nullptr);

// Rates guidellm's sweep runs between a synchronous and a throughput rate: `points - 2` rates
// evenly spaced from sync to max, sync itself left out.
std::vector<double> guidellm_rates(double sync_rate, double max_rate, int32_t points);

}  // namespace inferdesk::bench
