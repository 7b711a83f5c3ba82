#include "core/bench/benchmark.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "core/util/error.h"

namespace inferdesk::bench {

Driver http_driver() { return [](const LoadOptions& o, const std::vector<BenchRequest>& r) { return run_load(o, r); }; }

namespace {

std::vector<double> parse_numbers(const std::string& list, const std::string& what) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !(v > 0))
      throw Error(ErrorCode::InvalidArgument, "--sweep " + what + ": '" + item + "' is not a number > 0");
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

std::string label_of(const char* what, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s %g", what, v);
  return buf;
}

}  // namespace

Sweep parse_sweep(const std::string& spec) {
  Sweep s;
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "guidellm") {
    s.kind = Sweep::Kind::Guidellm;
    if (!rest.empty()) {
      const auto n = parse_numbers(rest, "guidellm");
      if (n.size() != 1 || n[0] < 3 || n[0] != std::floor(n[0]))
        throw Error(ErrorCode::InvalidArgument, "--sweep guidellm:N wants one whole N >= 3");
      s.guidellm_points = static_cast<int32_t>(n[0]);
    }
    return s;
  }
  if ((kind != "concurrency" && kind != "rate") || rest.empty())
    throw Error(ErrorCode::InvalidArgument,
                "--sweep: '" + spec + "' is not concurrency:N,N,... | rate:R,R,... | guidellm[:N]");
  s.kind = kind == "rate" ? Sweep::Kind::Rate : Sweep::Kind::Concurrency;
  s.values = parse_numbers(rest, kind);
  if (s.kind == Sweep::Kind::Concurrency)
    for (double v : s.values)
      if (v != std::floor(v)) throw Error(ErrorCode::InvalidArgument, "--sweep concurrency: whole numbers only");
  return s;
}

std::vector<double> guidellm_rates(double sync_rate, double max_rate, int32_t points) {
  std::vector<double> out;
  const int32_t n = points - 1;  // linspace(sync, max, points - 1) without its first value
  for (int32_t i = 1; i < n; ++i) out.push_back(sync_rate + (max_rate - sync_rate) * i / (n - 1));
  return out;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t point_seed(uint64_t seed, int32_t point) {
  // The point is mixed on its own first: (seed, p + 1) and (seed + 1, p) must not collide.
  return splitmix64(seed ^ splitmix64(static_cast<uint64_t>(static_cast<int64_t>(point))));
}

RequestSource seeded_source(uint64_t seed, int32_t per_point, int32_t warmup, DrawRequests make) {
  return [seed, per_point, warmup, make = std::move(make)](int32_t point) {
    const uint64_t s = point_seed(seed, point);
    return RequestSet{make(s, point == kWarmupPoint ? warmup : per_point), s, {}};
  };
}

RequestSource pool_source(std::vector<BenchRequest> pool, int32_t per_point, int32_t warmup, uint64_t seed) {
  auto shared = std::make_shared<const std::vector<BenchRequest>>(std::move(pool));
  return [shared, per_point, warmup, seed](int32_t point) {
    RequestSet set{{}, seed, {}};
    const std::vector<BenchRequest>& all = *shared;
    if (all.empty()) return set;
    const size_t n = static_cast<size_t>(std::max(0, point == kWarmupPoint ? warmup : per_point));
    const size_t first = point == kWarmupPoint
                             ? 0
                             : static_cast<size_t>(std::max(0, warmup)) + static_cast<size_t>(point) * n;
    for (size_t i = 0; i < n; ++i) set.requests.push_back(all[(first + i) % all.size()]);
    if (first + n > all.size())
      set.note = "the dataset has " + std::to_string(all.size()) + " usable prompts and this point needs prompts " +
                 std::to_string(first + 1) + " to " + std::to_string(first + n) + ": prompts repeat";
    return set;
  };
}

size_t point_count(const Sweep& s) {
  return s.kind == Sweep::Kind::None       ? 1
         : s.kind == Sweep::Kind::Guidellm ? static_cast<size_t>(std::max(0, s.guidellm_points))
                                           : s.values.size();
}

namespace {

struct Runner {
  const Driver& driver;
  const RequestSource& source;
  const BenchmarkSpec& spec;
  const ProgressCallback& progress;
  const std::atomic<bool>* cancel;
  size_t points = 1;
  std::vector<PointResult> out;

  bool cancelled() const { return cancel && cancel->load(); }

  void run_point(std::string label, double rate, double burstiness, int32_t concurrency) {
    if (cancelled()) return;
    LoadOptions o = spec.load;
    o.request_rate = rate;
    o.burstiness = burstiness;
    o.max_concurrency = concurrency;
    o.cancel = cancel;
    const size_t point = out.size();
    RequestSet set = source(static_cast<int32_t>(point));
    const std::vector<BenchRequest>& requests = set.requests;
    size_t done = 0;
    o.on_request_done = [&, point](size_t i, const RequestResult& r) {
      ++done;
      if (spec.load.on_request_done) spec.load.on_request_done(i, r);
      if (progress) progress({point, points, done, requests.size(), i, &r});
    };
    PointResult p;
    p.label = std::move(label);
    p.request_rate = rate;
    p.burstiness = burstiness;
    p.max_concurrency = concurrency;
    p.prompt_seed = set.prompt_seed;
    p.prompt_note = std::move(set.note);
    p.run = driver(o, requests);
    p.summary = summarize(p.run, requests, spec.summary);
    p.requests = std::move(set.requests);
    out.push_back(std::move(p));
  }

  // The warm-up's own set, never measured: its prompts are not among any point's.
  void warm_up() {
    if (spec.warmup <= 0 || cancelled()) return;
    const std::vector<BenchRequest> requests = source(kWarmupPoint).requests;
    if (requests.empty()) return;
    LoadOptions o = spec.load;
    o.request_rate = std::numeric_limits<double>::infinity();
    o.max_concurrency = 1;
    o.cancel = cancel;
    o.on_request_done = nullptr;
    std::vector<BenchRequest> first;
    for (size_t i = 0; i < static_cast<size_t>(spec.warmup); ++i) {
      first.push_back(requests[i % requests.size()]);
      first.back().after = -1;  // a warm-up turn stands alone
      first.back().make_body = nullptr;
      if (first.back().body.empty()) first.pop_back();
    }
    driver(o, first);
  }

  void guidellm_sweep() {
    const double inf = std::numeric_limits<double>::infinity();
    const int32_t cap = spec.sweep.guidellm_max_concurrency;
    run_point("synchronous", inf, 1, 1);
    run_point("throughput", inf, 1, cap);
    if (out.size() < 2) return;
    const double sync = out[0].summary.request_throughput, max = out[1].summary.request_throughput;
    if (!(sync > 0) || !(max > 0)) return;  // nothing succeeded: no rates to place
    // guidellm's "constant" strategy: evenly spaced arrivals (an infinite gamma shape).
    for (double r : guidellm_rates(sync, max, spec.sweep.guidellm_points)) run_point(label_of("rate", r), r, inf, cap);
  }
};

}  // namespace

std::vector<PointResult> run_benchmark(const Driver& driver, const RequestSource& source, const BenchmarkSpec& spec,
                                       const ProgressCallback& progress, const std::atomic<bool>* cancel) {
  Runner r{driver, source, spec, progress, cancel, 1, {}};
  const Sweep& s = spec.sweep;
  r.points = point_count(s);
  r.warm_up();
  switch (s.kind) {
    case Sweep::Kind::None:
      r.run_point("single", spec.load.request_rate, spec.load.burstiness, spec.load.max_concurrency);
      break;
    case Sweep::Kind::Concurrency:
      for (double c : s.values)
        r.run_point(label_of("concurrency", c), spec.load.request_rate, spec.load.burstiness, static_cast<int32_t>(c));
      break;
    case Sweep::Kind::Rate:
      for (double v : s.values) r.run_point(label_of("rate", v), v, spec.load.burstiness, spec.load.max_concurrency);
      break;
    case Sweep::Kind::Guidellm:
      r.guidellm_sweep();
      break;
  }
  return std::move(r.out);
}

}  // namespace inferdesk::bench
