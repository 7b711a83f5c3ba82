#include "core/bench/bench_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"

namespace inferdesk::bench {

double percentile(std::vector<double> v, double percent) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = percent / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

const char* to_string(TokenSource s) {
  switch (s) {
    case TokenSource::Usage: return "usage";
    case TokenSource::Tokenizer: return "tokenizer";
    case TokenSource::Chunks: return "chunks";
    case TokenSource::None: break;
  }
  return "none";
}

Slo parse_goodput(const std::string& spec) {
  Slo slo;
  std::string text = spec;
  for (char& c : text)
    if (c == ',') c = ' ';
  std::istringstream in(text);
  for (std::string item; in >> item;) {
    const size_t colon = item.find(':');
    const std::string key = item.substr(0, colon);
    double v = -1;
    size_t used = 0;
    try {
      if (colon != std::string::npos) v = std::stod(item.substr(colon + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (colon == std::string::npos || used == 0 || used != item.size() - colon - 1 || !(v >= 0))
      throw Error(ErrorCode::InvalidArgument, "--goodput: '" + item + "' is not NAME:MILLISECONDS (ttft, tpot, e2el)");
    if (key == "ttft")
      slo.ttft_ms = v;
    else if (key == "tpot")
      slo.tpot_ms = v;
    else if (key == "e2el")
      slo.e2el_ms = v;
    else
      throw Error(ErrorCode::InvalidArgument, "--goodput: unknown metric '" + key + "' (ttft, tpot, e2el)");
  }
  return slo;
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

std::vector<int64_t> output_lengths(const LoadResult& run, const Tokenizer* tok, std::vector<TokenSource>* sources) {
  std::vector<int64_t> out(run.requests.size(), 0);
  if (sources) sources->assign(run.requests.size(), TokenSource::None);
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RequestResult& r = run.requests[i];
    if (!r.success) continue;
    TokenSource src = TokenSource::Usage;
    if (r.output_tokens > 0) {
      out[i] = r.output_tokens;
    } else if (tok) {  // vLLM's fallback: the reply's text, without special tokens
      out[i] = static_cast<int64_t>(tok->encode(r.text, false).size());
      src = TokenSource::Tokenizer;
    } else {
      out[i] = r.chunks;
      src = TokenSource::Chunks;
    }
    if (sources) (*sources)[i] = src;
  }
  return out;
}

std::vector<int64_t> input_lengths(const LoadResult& run, const std::vector<BenchRequest>& requests) {
  std::vector<int64_t> out(run.requests.size(), 0);
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const int64_t known = i < requests.size() ? requests[i].prompt_tokens : 0;
    out[i] = known > 0 ? known : run.requests[i].prompt_tokens;
  }
  return out;
}

BenchSummary summarize(const LoadResult& run, const std::vector<BenchRequest>& requests,
                       const std::vector<double>& percents) {
  SummaryOptions o;
  o.percents = percents;
  return summarize(run, requests, o);
}

namespace {

bool within(const Slo& slo, double ttft_s, double tpot_s, double e2el_s) {
  auto ok = [](const std::optional<double>& limit_ms, double v_s) { return !limit_ms || v_s * 1000.0 <= *limit_ms; };
  return ok(slo.ttft_ms, ttft_s) && ok(slo.tpot_ms, tpot_s) && ok(slo.e2el_ms, e2el_s);
}

void count_failure(BenchSummary& s, const RequestResult& r) {
  r.aborted ? ++s.aborted : ++s.failed;
  if (!r.aborted && s.errors.size() < 8 && std::find(s.errors.begin(), s.errors.end(), r.error) == s.errors.end())
    s.errors.push_back(r.error);
}

}  // namespace

BenchSummary summarize(const LoadResult& run, const std::vector<BenchRequest>& requests, const SummaryOptions& o) {
  BenchSummary s;
  s.duration_s = run.duration_s;
  s.max_concurrent_requests = run.max_concurrent;
  s.has_goodput = !o.slo.empty();
  std::vector<TokenSource> sources;
  const std::vector<int64_t> outs = output_lengths(run, o.tokenizer, &sources);
  const std::vector<int64_t> ins = input_lengths(run, requests);
  std::vector<double> ttft, tpot, itl, e2el;
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RequestResult& r = run.requests[i];
    if (!r.success) {
      count_failure(s, r);
      continue;
    }
    ++s.completed;
    (sources[i] == TokenSource::Usage ? s.outputs_from_usage
     : sources[i] == TokenSource::Tokenizer ? s.outputs_retokenized
                                            : s.outputs_from_chunks) += 1;
    s.total_output_tokens += outs[i];
    s.total_input_tokens += ins[i];
    ttft.push_back(r.ttft_s);
    e2el.push_back(r.latency_s);
    double request_tpot = 0;  // one-token replies count 0 against the TPOT SLO, as vLLM does
    if (outs[i] > 1) {
      request_tpot = (r.latency_s - r.ttft_s) / static_cast<double>(outs[i] - 1);
      tpot.push_back(request_tpot);
    }
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    if (s.has_goodput && within(o.slo, r.ttft_s, request_tpot, r.latency_s)) ++s.good_completed;
  }
  if (s.duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / s.duration_s;
    s.request_goodput = static_cast<double>(s.good_completed) / s.duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / s.duration_s;
    s.total_token_throughput = static_cast<double>(s.total_input_tokens + s.total_output_tokens) / s.duration_s;
  }
  s.max_output_tokens_per_s = peak_tokens_per_s(run);
  s.ttft_ms = distribution(ms(ttft), o.percents);
  s.tpot_ms = distribution(ms(tpot), o.percents);
  s.itl_ms = distribution(ms(itl), o.percents);
  s.e2el_ms = distribution(ms(e2el), o.percents);
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
  j["request_goodput"] = s.has_goodput ? nlohmann::ordered_json(s.request_goodput) : nlohmann::ordered_json(nullptr);
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
  if (s.has_goodput) row("Request goodput (req/s):", s.request_goodput);
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
