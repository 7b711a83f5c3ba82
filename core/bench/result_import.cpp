// Reading result files back: ours and vLLM's (--save-result), GenAI-Perf's
// profile_export_genai_perf.json and guidellm's benchmarks.json. Each tool's metric closest to
// vLLM's is mapped onto BenchSummary: GenAI-Perf's and guidellm's per-request inter-token latency
// ((latency - TTFT) / (tokens - 1)) is vLLM's TPOT; neither pools chunk gaps, so ITL stays empty.
#include <fstream>
#include <sstream>

#include "core/bench/result_io.h"
#include "core/util/error.h"

namespace inferdesk::bench {

namespace {

using Json = nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::Format, where + ": " + what);
}

// A number at j[key]; absent (or null) gives `fallback`; anything else is an error.
double number(const Json& j, const char* key, const std::string& where, double fallback = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_string() && it->get<std::string>() == "inf") return std::numeric_limits<double>::infinity();
  if (!it->is_number()) bad(where, std::string("\"") + key + "\" is not a number");
  return it->get<double>();
}

const Json& object(const Json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) bad(where, std::string("\"") + key + "\" is missing or not an object");
  return *it;
}

std::string text(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// vLLM: mean_<m>_ms, median_<m>_ms, std_<m>_ms, p<P>_<m>_ms.
Distribution vllm_distribution(const Json& j, const std::string& m) {
  Distribution d;
  d.mean = number(j, ("mean_" + m + "_ms").c_str(), "vLLM result");
  d.median = number(j, ("median_" + m + "_ms").c_str(), "vLLM result");
  d.std = number(j, ("std_" + m + "_ms").c_str(), "vLLM result");
  const std::string tail = "_" + m + "_ms";
  for (const auto& [k, v] : j.items()) {
    if (k.size() <= tail.size() + 1 || k[0] != 'p' || k.compare(k.size() - tail.size(), tail.size(), tail) != 0) continue;
    const std::string pct = k.substr(1, k.size() - tail.size() - 1);
    size_t used = 0;
    double p = -1;
    try {
      p = std::stod(pct, &used);
    } catch (const std::exception&) {
      continue;  // another key that happens to end alike
    }
    if (used != pct.size()) continue;
    if (!v.is_number()) bad("vLLM result", "\"" + k + "\" is not a number");
    d.percentiles.push_back({p, v.get<double>()});
  }
  return d;
}

std::optional<LoadResult> raw_run(const Json& j) {
  auto it = j.find("inferdesk_raw");
  if (it == j.end()) return std::nullopt;
  const std::string where = "inferdesk_raw";
  if (!it->is_object()) bad(where, "not an object");
  LoadResult run;
  run.duration_s = number(*it, "duration_s", where);
  run.max_concurrent = static_cast<int32_t>(number(*it, "max_concurrent", where));
  auto reqs = it->find("requests");
  if (reqs == it->end() || !reqs->is_array()) bad(where, "\"requests\" is not an array");
  for (size_t i = 0; i < reqs->size(); ++i) {
    const Json& q = (*reqs)[i];
    const std::string at = where + ".requests[" + std::to_string(i) + "]";
    if (!q.is_object()) bad(at, "not an object");
    RequestResult r;
    r.success = q.value("success", false);
    r.aborted = q.value("aborted", false);
    r.cancelled = q.value("cancelled", false);
    r.http_status = static_cast<int>(number(q, "http_status", at));
    r.error = text(q, "error");
    r.start_s = number(q, "start_s", at);
    r.ttft_s = number(q, "ttft_s", at);
    r.latency_s = number(q, "latency_s", at);
    r.prompt_tokens = static_cast<int64_t>(number(q, "prompt_tokens", at));
    r.output_tokens = static_cast<int64_t>(number(q, "output_tokens", at));
    r.chunks = static_cast<int32_t>(number(q, "chunks", at));
    r.finish_reason = text(q, "finish_reason");
    auto c = q.find("chunk_s");
    if (c == q.end() || !c->is_array()) bad(at, "\"chunk_s\" is not an array");
    for (const auto& t : *c) {
      if (!t.is_number()) bad(at, "\"chunk_s\" holds a non-number");
      r.chunk_s.push_back(t.get<double>());
    }
    for (size_t k = 1; k < r.chunk_s.size(); ++k) r.itl_s.push_back(r.chunk_s[k] - r.chunk_s[k - 1]);
    run.requests.push_back(std::move(r));
  }
  return run;
}

}  // namespace

ImportedResult parse_vllm_result(const Json& j) {
  const std::string where = "vLLM result";
  if (!j.is_object() || !j.contains("completed") || !j.contains("duration"))
    bad(where, "expected an object with \"completed\" and \"duration\"");
  ImportedResult r;
  r.raw = raw_run(j);
  r.tool = r.raw ? "inferdesk" : "vllm";
  r.info.date = text(j, "date");
  r.info.backend = text(j, "backend").empty() ? text(j, "endpoint_type") : text(j, "backend");
  r.info.label = text(j, "label");
  r.info.model_id = text(j, "model_id");
  r.info.tokenizer_id = text(j, "tokenizer_id");
  r.info.num_prompts = static_cast<int64_t>(number(j, "num_prompts", where));
  r.info.request_rate = number(j, "request_rate", where, std::numeric_limits<double>::infinity());
  r.info.burstiness = number(j, "burstiness", where, 1);
  r.info.max_concurrency = static_cast<int32_t>(number(j, "max_concurrency", where));
  if (auto seed = j.find("prompt_seed"); seed != j.end() && seed->is_number_unsigned())
    r.info.prompt_seed = seed->get<uint64_t>();
  r.info.prompt_note = text(j, "prompt_note");
  BenchSummary& s = r.summary;
  s.completed = static_cast<int64_t>(number(j, "completed", where));
  s.failed = static_cast<int64_t>(number(j, "failed", where));
  s.duration_s = number(j, "duration", where);
  s.total_input_tokens = static_cast<int64_t>(number(j, "total_input_tokens", where));
  s.total_output_tokens = static_cast<int64_t>(number(j, "total_output_tokens", where));
  s.request_throughput = number(j, "request_throughput", where);
  s.has_goodput = j.contains("request_goodput") && !j["request_goodput"].is_null();
  s.request_goodput = number(j, "request_goodput", where);
  s.output_throughput = number(j, "output_throughput", where);
  s.total_token_throughput = number(j, "total_token_throughput", where);
  s.max_output_tokens_per_s = number(j, "max_output_tokens_per_s", where);
  s.max_concurrent_requests = static_cast<int32_t>(number(j, "max_concurrent_requests", where));
  s.ttft_ms = vllm_distribution(j, "ttft");
  s.tpot_ms = vllm_distribution(j, "tpot");
  s.itl_ms = vllm_distribution(j, "itl");
  s.e2el_ms = vllm_distribution(j, "e2el");
  if (auto e = j.find("errors"); e != j.end() && e->is_array())
    for (const auto& x : *e)
      if (x.is_string() && !x.get<std::string>().empty() && s.errors.size() < 8) s.errors.push_back(x.get<std::string>());
  return r;
}

namespace {

// GenAI-Perf: {"unit": ..., "avg": ..., "std": ..., "p50": ..., "p99": ...}; scale: to ms.
Distribution genai_distribution(const Json& j, const char* key, double scale) {
  Distribution d;
  auto it = j.find(key);
  if (it == j.end()) return d;
  const std::string where = std::string("GenAI-Perf \"") + key + "\"";
  if (!it->is_object()) bad(where, "not an object");
  d.mean = number(*it, "avg", where) * scale;
  d.std = number(*it, "std", where) * scale;
  d.median = number(*it, "p50", where) * scale;
  for (const auto& [k, v] : it->items()) {
    if (k.size() < 2 || k[0] != 'p' || k.find_first_not_of("0123456789", 1) != std::string::npos) continue;
    if (!v.is_number()) bad(where, "\"" + k + "\" is not a number");
    d.percentiles.push_back({std::stod(k.substr(1)), v.get<double>() * scale});
  }
  return d;
}

double genai_avg(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (!it->is_object()) bad(std::string("GenAI-Perf \"") + key + "\"", "not an object");
  return number(*it, "avg", std::string("GenAI-Perf \"") + key + "\"");
}

}  // namespace

ImportedResult parse_genai_perf(const Json& j) {
  if (!j.is_object() || !(j.contains("time_to_first_token") || j.contains("request_latency")))
    bad("GenAI-Perf result", "expected \"time_to_first_token\" or \"request_latency\"");
  ImportedResult r;
  r.tool = "genai-perf";
  BenchSummary& s = r.summary;
  s.ttft_ms = genai_distribution(j, "time_to_first_token", 1);
  s.tpot_ms = genai_distribution(j, "inter_token_latency", 1);
  s.e2el_ms = genai_distribution(j, "request_latency", 1);
  s.request_throughput = genai_avg(j, "request_throughput");
  s.output_throughput = genai_avg(j, "output_token_throughput");
  s.completed = static_cast<int64_t>(genai_avg(j, "request_count"));
  if (s.completed > 0 && s.request_throughput > 0) s.duration_s = static_cast<double>(s.completed) / s.request_throughput;
  const double osl = genai_avg(j, "output_sequence_length"), isl = genai_avg(j, "input_sequence_length");
  s.total_output_tokens = static_cast<int64_t>(osl * static_cast<double>(s.completed) + 0.5);
  s.total_input_tokens = static_cast<int64_t>(isl * static_cast<double>(s.completed) + 0.5);
  if (auto c = j.find("input_config"); c != j.end() && c->is_object()) {
    if (auto m = c->find("model"); m != c->end() && m->is_array() && !m->empty() && (*m)[0].is_string())
      r.info.model_id = (*m)[0].get<std::string>();
    r.info.max_concurrency = static_cast<int32_t>(number(*c, "concurrency", "GenAI-Perf input_config"));
  }
  return r;
}

namespace {

// guidellm percentile names: p001 = 0.1, p01 = 1, p05 = 5, p25 = 25, p999 = 99.9.
double guidellm_percent(const std::string& digits) {
  if (digits == "999") return 99.9;
  if (digits.size() == 3 && digits[0] == '0') return std::stod(digits) / 10.0;
  return std::stod(digits);
}

// A StatusDistributionSummary's "successful" part; scale: to ms.
Distribution guidellm_distribution(const Json& metrics, const char* key, double scale, const std::string& where) {
  Distribution d;
  auto it = metrics.find(key);
  if (it == metrics.end()) return d;
  const std::string at = where + ".metrics." + key;
  if (!it->is_object()) bad(at, "not an object");
  const Json& ok = object(*it, "successful", at);
  d.mean = number(ok, "mean", at) * scale;
  d.median = number(ok, "median", at) * scale;
  d.std = number(ok, "std_dev", at) * scale;
  if (auto p = ok.find("percentiles"); p != ok.end()) {
    if (!p->is_object()) bad(at, "\"percentiles\" is not an object");
    for (const auto& [k, v] : p->items()) {
      if (k.size() < 2 || k[0] != 'p' || k.find_first_not_of("0123456789", 1) != std::string::npos) continue;
      if (!v.is_number()) bad(at, "\"" + k + "\" is not a number");
      d.percentiles.push_back({guidellm_percent(k.substr(1)), v.get<double>() * scale});
    }
  }
  return d;
}

ImportedResult guidellm_benchmark(const Json& b, const std::string& where) {
  if (!b.is_object()) bad(where, "not an object");
  const Json& m = object(b, "metrics", where);
  ImportedResult r;
  r.tool = "guidellm";
  BenchSummary& s = r.summary;
  s.ttft_ms = guidellm_distribution(m, "time_to_first_token_ms", 1, where);
  s.tpot_ms = guidellm_distribution(m, "inter_token_latency_ms", 1, where);
  s.e2el_ms = guidellm_distribution(m, "request_latency", 1000, where);
  s.request_throughput = guidellm_distribution(m, "requests_per_second", 1, where).mean;
  s.output_throughput = guidellm_distribution(m, "output_tokens_per_second", 1, where).mean;
  s.total_token_throughput = guidellm_distribution(m, "tokens_per_second", 1, where).mean;
  if (auto t = m.find("request_totals"); t != m.end() && t->is_object()) {
    s.completed = static_cast<int64_t>(number(*t, "successful", where + ".request_totals"));
    s.failed = static_cast<int64_t>(number(*t, "errored", where + ".request_totals"));
    s.aborted = static_cast<int64_t>(number(*t, "incomplete", where + ".request_totals"));
  }
  s.duration_s = number(b, "duration", where);
  if (s.duration_s == 0) s.duration_s = number(b, "end_time", where) - number(b, "start_time", where);
  // The strategy is under "config" (guidellm 0.3+) or "args" (0.2).
  for (const char* holder : {"config", "args"}) {
    auto c = b.find(holder);
    if (c == b.end() || !c->is_object() || !c->contains("strategy") || !(*c)["strategy"].is_object()) continue;
    const Json& st = (*c)["strategy"];
    r.info.label = text(st, "type_");
    r.info.request_rate = number(st, "rate", where + ".strategy");
    r.info.max_concurrency = static_cast<int32_t>(number(st, "streams", where + ".strategy"));
  }
  return r;
}

}  // namespace

std::vector<ImportedResult> parse_guidellm(const Json& j) {
  if (!j.is_object() || !j.contains("benchmarks") || !j["benchmarks"].is_array())
    bad("guidellm report", "expected an object with a \"benchmarks\" array");
  std::vector<ImportedResult> out;
  const Json& list = j["benchmarks"];
  for (size_t i = 0; i < list.size(); ++i) out.push_back(guidellm_benchmark(list[i], "benchmarks[" + std::to_string(i) + "]"));
  return out;
}

std::vector<ImportedResult> parse_result(const Json& j) {
  if (j.is_array() && !j.empty() && j[0].is_object() && j[0].contains("inferdesk_raw")) {  // our sweep: a run a point
    std::vector<ImportedResult> out;
    for (const auto& point : j) out.push_back(parse_vllm_result(point));
    return out;
  }
  if (j.is_object() && j.contains("benchmarks")) return parse_guidellm(j);
  if (j.is_object() && j.contains("completed") && j.contains("duration")) return {parse_vllm_result(j)};
  if (j.is_object() && (j.contains("time_to_first_token") || j.contains("request_latency"))) return {parse_genai_perf(j)};
  bad("result file", "not a vLLM, GenAI-Perf, guidellm or InferDesk result");
}

std::vector<ImportedResult> load_result_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(ErrorCode::NotFound, "result file not found: " + path.string());
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f && !f.eof()) throw Error(ErrorCode::Io, "cannot read " + path.string());
  const Json j = Json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw Error(ErrorCode::Format, path.string() + ": not valid JSON");
  try {
    return parse_result(j);
  } catch (const Error& e) {
    throw Error(e.code(), path.string() + ": " + e.what());
  }
}

}  // namespace inferdesk::bench
