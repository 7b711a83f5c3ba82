#include "gui/dashboard/dashboard_run.h"

#include <sstream>

#include "core/util/error.h"

namespace inferdesk::gui {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

Json records_to_json(const std::vector<RequestRecord>& records) {
  Json a = Json::array();
  for (const auto& r : records)
    a.push_back({{"success", r.success}, {"error", r.error}, {"start_s", r.start_s}, {"ttft_s", r.ttft_s},
                 {"latency_s", r.latency_s}, {"prompt_tokens", r.prompt_tokens},
                 {"output_tokens", r.output_tokens}, {"chunk_s", r.chunk_s}});
  return a;
}

template <typename T>
T field(const Json& j, const char* key, T fallback) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const Json& v = j[key];
  if constexpr (std::is_same_v<T, std::string>) return v.is_string() ? v.get<std::string>() : fallback;
  else if constexpr (std::is_same_v<T, bool>) return v.is_boolean() ? v.get<bool>() : fallback;
  else return v.is_number() ? v.get<T>() : fallback;
}

std::vector<RequestRecord> records_from_json(const Json& a) {
  std::vector<RequestRecord> out;
  if (!a.is_array()) throw Error(ErrorCode::Format, "the per-request records are not a list");
  for (const Json& j : a) {
    RequestRecord r;
    r.success = field(j, "success", false);
    r.error = field(j, "error", std::string());
    r.start_s = field(j, "start_s", 0.0);
    r.ttft_s = field(j, "ttft_s", 0.0);
    r.latency_s = field(j, "latency_s", 0.0);
    r.prompt_tokens = field<int64_t>(j, "prompt_tokens", 0);
    r.output_tokens = field<int64_t>(j, "output_tokens", 0);
    if (j.is_object() && j.contains("chunk_s") && j["chunk_s"].is_array())
      for (const Json& t : j["chunk_s"])
        if (t.is_number()) r.chunk_s.push_back(t.get<double>());
    out.push_back(std::move(r));
  }
  return out;
}

Json parse_or_fail(const std::string& text, const std::string& what) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error(ErrorCode::Format, what + " is not valid JSON");
  return j;
}

}  // namespace

RequestRecord record_of(const bench::RequestResult& r) {
  return RequestRecord{r.success, r.error, r.start_s, r.ttft_s, r.latency_s, r.prompt_tokens, r.output_tokens, r.chunk_s};
}

double summary_value(const OJson& summary, const std::string& key) {
  if (!summary.is_object() || !summary.contains(key) || !summary[key].is_number()) return 0;
  return summary[key].get<double>();
}

store::BenchRunRow to_row(const DashboardRun& run) {
  store::BenchRunRow row;
  row.id = run.id;
  row.label = run.label;
  row.endpoint_name = run.endpoint_name;
  row.base_url = run.base_url;
  row.model = run.model;
  row.engine = run.engine;
  row.engine_version = run.engine_version;
  row.engine_flags = run.engine_flags;
  row.workload_json = run.workload.dump();
  row.machine_json = run.machine.dump();
  row.status = run.status;
  row.started_at = run.started_at;
  row.finished_at = run.finished_at;
  for (size_t i = 0; i < run.points.size(); ++i) {
    const DashboardPoint& p = run.points[i];
    OJson summary = p.summary;
    summary["offset_s"] = p.offset_s;
    row.points.push_back({0, static_cast<int>(i), p.concurrency, p.request_rate, summary.dump(),
                          records_to_json(p.requests).dump()});
  }
  return row;
}

DashboardRun from_row(const store::BenchRunRow& row) {
  const std::string what = "saved run " + std::to_string(row.id);
  DashboardRun run;
  run.id = row.id;
  run.label = row.label;
  run.endpoint_name = row.endpoint_name;
  run.base_url = row.base_url;
  run.model = row.model;
  run.engine = row.engine;
  run.engine_version = row.engine_version;
  run.engine_flags = row.engine_flags;
  run.workload = parse_or_fail(row.workload_json, what + "'s workload");
  run.machine = parse_or_fail(row.machine_json, what + "'s machine");
  run.status = row.status;
  run.started_at = row.started_at;
  run.finished_at = row.finished_at;
  for (const auto& p : row.points) {
    DashboardPoint point;
    point.concurrency = p.concurrency;
    point.request_rate = p.request_rate;
    point.summary = OJson::parse(p.summary_json, nullptr, false);
    if (point.summary.is_discarded() || !point.summary.is_object())
      throw Error(ErrorCode::Format, what + ": a point's summary is not a JSON object");
    point.offset_s = summary_value(point.summary, "offset_s");
    point.summary.erase("offset_s");
    point.requests = records_from_json(parse_or_fail(p.requests_json, what + "'s request records"));
    run.points.push_back(std::move(point));
  }
  return run;
}

OJson export_json(const DashboardRun& run) {
  OJson out = {{"label", run.label},     {"endpoint", run.endpoint_name}, {"base_url", run.base_url},
               {"model_id", run.model},  {"backend", run.engine},         {"engine_version", run.engine_version},
               {"engine_flags", run.engine_flags}, {"status", run.status}, {"started_at_ms", run.started_at},
               {"finished_at_ms", run.finished_at}, {"workload", run.workload}, {"machine", run.machine}};
  OJson points = OJson::array();
  for (const auto& p : run.points) {
    OJson j = {{"max_concurrency", p.concurrency}};
    j["request_rate"] = p.request_rate ? OJson(*p.request_rate) : OJson("inf");
    for (const auto& [k, v] : p.summary.items()) j[k] = v;
    points.push_back(std::move(j));
  }
  out["points"] = std::move(points);
  return out;
}

DashboardRun import_json(const std::string& text) {
  const Json j = parse_or_fail(text, "the file");
  if (!j.is_object() || !j.contains("points") || !j["points"].is_array())
    throw Error(ErrorCode::Format, "the file is not a dashboard run (no \"points\" list)");
  DashboardRun run;
  run.label = field(j, "label", std::string());
  run.endpoint_name = field(j, "endpoint", std::string());
  run.base_url = field(j, "base_url", std::string());
  run.model = field(j, "model_id", std::string());
  run.engine = field(j, "backend", std::string());
  run.engine_version = field(j, "engine_version", std::string());
  run.engine_flags = field(j, "engine_flags", std::string());
  run.status = field(j, "status", std::string("complete"));
  run.started_at = field<int64_t>(j, "started_at_ms", 0);
  run.finished_at = field<int64_t>(j, "finished_at_ms", 0);
  if (j.contains("workload")) run.workload = j["workload"];
  if (j.contains("machine")) run.machine = j["machine"];
  for (const Json& p : j["points"]) {
    if (!p.is_object()) throw Error(ErrorCode::Format, "a point is not a JSON object");
    DashboardPoint point;
    point.concurrency = field(p, "max_concurrency", 0);
    if (p.contains("request_rate") && p["request_rate"].is_number()) point.request_rate = p["request_rate"].get<double>();
    point.summary = OJson::parse(p.dump());
    point.summary.erase("max_concurrency");
    point.summary.erase("request_rate");
    run.points.push_back(std::move(point));
  }
  return run;
}

std::string export_csv(const DashboardRun& run) {
  std::vector<std::string> keys;
  if (!run.points.empty())
    for (const auto& [k, v] : run.points.front().summary.items())
      if (v.is_number()) keys.push_back(k);
  std::ostringstream out;
  out << "max_concurrency";
  for (const auto& k : keys) out << ',' << k;
  out << '\n';
  for (const auto& p : run.points) {
    out << p.concurrency;
    for (const auto& k : keys) out << ',' << summary_value(p.summary, k);
    out << '\n';
  }
  return out.str();
}

}  // namespace inferdesk::gui
