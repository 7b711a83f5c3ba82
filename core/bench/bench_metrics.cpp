#include "core/bench/bench_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace inferdesk::bench {

double percentile(std::vector<double> v, double percent) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = percent / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

Distribution distribution(std::vector<double> v, const std::vector<double>& percents) {
  Distribution d;
  if (v.empty()) {
    for (double p : percents) d.percentiles.push_back({p, 0});
    return d;
  }
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - d.mean) * (x - d.mean);
  d.std = std::sqrt(sq / static_cast<double>(v.size()));
  std::sort(v.begin(), v.end());
  d.median = percentile(v, 50);
  for (double p : percents) d.percentiles.push_back({p, percentile(v, p)});
  return d;
}

namespace {

// Chunk arrivals of all completed requests in 1-second buckets: the busiest bucket's tokens
// (a chunk counts one token, as vLLM counts it).
double peak_tokens_per_s(const LoadResult& run) {
  std::map<int64_t, int64_t> buckets;
  for (const RequestResult& r : run.requests) {
    if (!r.success || r.chunks == 0) continue;
    double t = r.start_s + r.ttft_s;
    ++buckets[static_cast<int64_t>(t)];
    for (double gap : r.itl_s) {
      t += gap;
      ++buckets[static_cast<int64_t>(t)];
    }
  }
  int64_t best = 0;
  for (const auto& [s, n] : buckets) best = std::max(best, n);
  return static_cast<double>(best);
}

std::vector<double> ms(const std::vector<double>& seconds) {
  std::vector<double> out;
  out.reserve(seconds.size());
  for (double s : seconds) out.push_back(s * 1000.0);
  return out;
}

std::string pct_name(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

}  // namespace

BenchSummary summarize(const LoadResult& run, const std::vector<BenchRequest>& requests,
                       const std::vector<double>& percents) {
  BenchSummary s;
  s.duration_s = run.duration_s;
  s.max_concurrent_requests = run.max_concurrent;
  std::vector<double> ttft, tpot, itl, e2el;
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RequestResult& r = run.requests[i];
    if (!r.success) {
      r.aborted ? ++s.aborted : ++s.failed;
      if (!r.aborted && s.errors.size() < 8 && std::find(s.errors.begin(), s.errors.end(), r.error) == s.errors.end())
        s.errors.push_back(r.error);
      continue;
    }
    ++s.completed;
    const int64_t out = r.output_tokens > 0 ? r.output_tokens : r.chunks;
    const int64_t in = r.prompt_tokens > 0 ? r.prompt_tokens : (i < requests.size() ? requests[i].prompt_tokens : 0);
    s.total_output_tokens += out;
    s.total_input_tokens += in;
    ttft.push_back(r.ttft_s);
    e2el.push_back(r.latency_s);
    if (out > 1) tpot.push_back((r.latency_s - r.ttft_s) / static_cast<double>(out - 1));
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
  }
  if (s.duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / s.duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / s.duration_s;
    s.total_token_throughput = static_cast<double>(s.total_input_tokens + s.total_output_tokens) / s.duration_s;
  }
  s.max_output_tokens_per_s = peak_tokens_per_s(run);
  s.ttft_ms = distribution(ms(ttft), percents);
  s.tpot_ms = distribution(ms(tpot), percents);
  s.itl_ms = distribution(ms(itl), percents);
  s.e2el_ms = distribution(ms(e2el), percents);
  return s;
}

nlohmann::ordered_json to_json(const BenchSummary& s) {
  nlohmann::ordered_json j;
  j["duration"] = s.duration_s;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["aborted"] = s.aborted;
  j["total_input_tokens"] = s.total_input_tokens;
  j["total_output_tokens"] = s.total_output_tokens;
  j["request_throughput"] = s.request_throughput;
  j["request_goodput"] = nullptr;
  j["output_throughput"] = s.output_throughput;
  j["total_token_throughput"] = s.total_token_throughput;
  j["max_output_tokens_per_s"] = s.max_output_tokens_per_s;
  j["max_concurrent_requests"] = s.max_concurrent_requests;
  auto put = [&](const char* name, const Distribution& d) {
    j[std::string("mean_") + name + "_ms"] = d.mean;
    j[std::string("median_") + name + "_ms"] = d.median;
    j[std::string("std_") + name + "_ms"] = d.std;
    for (const auto& [p, v] : d.percentiles) {
      std::string key(1, 'p');
      key += pct_name(p);
      key += '_';
      key += name;
      key += "_ms";
      j[key] = v;
    }
  };
  put("ttft", s.ttft_ms);
  put("tpot", s.tpot_ms);
  put("itl", s.itl_ms);
  put("e2el", s.e2el_ms);
  j["errors"] = s.errors;
  return j;
}

std::string to_text(const BenchSummary& s) {
  std::string out;
  char line[160];
  auto row = [&](const char* k, double v, const char* fmt = "%-40s %12.2f\n") {
    std::snprintf(line, sizeof line, fmt, k, v);
    out += line;
  };
  out += "============ Serving Benchmark Result ============\n";
  row("Successful requests:", static_cast<double>(s.completed), "%-40s %12.0f\n");
  row("Failed requests:", static_cast<double>(s.failed), "%-40s %12.0f\n");
  row("Benchmark duration (s):", s.duration_s);
  row("Total input tokens:", static_cast<double>(s.total_input_tokens), "%-40s %12.0f\n");
  row("Total generated tokens:", static_cast<double>(s.total_output_tokens), "%-40s %12.0f\n");
  row("Request throughput (req/s):", s.request_throughput);
  row("Output token throughput (tok/s):", s.output_throughput);
  row("Peak output token throughput (tok/s):", s.max_output_tokens_per_s);
  row("Total Token throughput (tok/s):", s.total_token_throughput);
  auto block = [&](const char* title, const char* name, const Distribution& d) {
    out += std::string("---------------") + title + "----------------\n";
    row((std::string("Mean ") + name + " (ms):").c_str(), d.mean);
    row((std::string("Median ") + name + " (ms):").c_str(), d.median);
    for (const auto& [p, v] : d.percentiles) {
      std::string label(1, 'P');
      label += pct_name(p);
      label += ' ';
      label += name;
      label += " (ms):";
      row(label.c_str(), v);
    }
  };
  block("Time to First Token", "TTFT", s.ttft_ms);
  block("Time per Output Token (excl. 1st token)", "TPOT", s.tpot_ms);
  block("Inter-token Latency", "ITL", s.itl_ms);
  block("End-to-end Latency", "E2EL", s.e2el_ms);
  out += "==================================================\n";
  return out;
}

}  // namespace inferdesk::bench
