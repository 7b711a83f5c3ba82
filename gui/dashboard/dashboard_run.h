// A benchmark run as the dashboard holds it: the target (endpoint, engine, version, flags), the
// workload and machine as JSON, and per sweep point vLLM's summary keys (bench::to_json) with
// the raw per-request records. Converts to and from store::BenchRunRow (whose JSON is untrusted:
// a malformed column is Error(Format) naming the run) and exports JSON (vLLM's --save-result
// keys per point) and CSV. No widgets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bench/load_generator.h"
#include "core/store/store.h"

namespace inferdesk::gui {

struct RequestRecord {
  bool success = false;
  std::string error;
  double start_s = 0, ttft_s = 0, latency_s = 0;  // start: since the point began
  int64_t prompt_tokens = 0, output_tokens = 0;
  std::vector<double> chunk_s;  // content chunk arrivals since the point began
};

struct DashboardPoint {
  int concurrency = 0;  // 0: no cap
  std::optional<double> request_rate;
  nlohmann::ordered_json summary;  // vLLM's keys: "completed", "output_throughput", "p99_ttft_ms", ...
  std::vector<RequestRecord> requests;
  double offset_s = 0;  // when the point began, since the run began
};

struct DashboardRun {
  std::int64_t id = 0;  // 0: not saved
  std::string label, endpoint_name, base_url, model;
  std::string engine, engine_version, engine_flags;
  nlohmann::json workload = nlohmann::json::object();
  nlohmann::json machine = nlohmann::json::object();
  std::string status = "complete";
  std::int64_t started_at = 0, finished_at = 0;  // unix ms
  std::vector<DashboardPoint> points;
};

RequestRecord record_of(const bench::RequestResult& r);
store::BenchRunRow to_row(const DashboardRun& run);
DashboardRun from_row(const store::BenchRunRow& row);  // throws Error(Format)
// A number from a summary (0 when absent or not a number).
double summary_value(const nlohmann::ordered_json& summary, const std::string& key);

// {"label", "engine", ..., "workload", "machine", "points": [{"max_concurrency", vLLM's keys}]}.
nlohmann::ordered_json export_json(const DashboardRun& run);
// Reads export_json's output back (Error(Format) for anything else).
DashboardRun import_json(const std::string& text);
// One line per point: max_concurrency then every numeric vLLM key of the first point.
std::string export_csv(const DashboardRun& run);

}  // namespace inferdesk::gui
