#include "gui/dashboard/result_file_import.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>

#include <cmath>

#include "core/bench/result_io.h"
#include "core/util/error.h"

namespace inferdesk::gui {
namespace {

using Json = nlohmann::json;

const char* tool_name(const std::string& tool) {
  if (tool == "vllm") return "vLLM bench serve";
  if (tool == "genai-perf") return "GenAI-Perf";
  if (tool == "guidellm") return "guidellm";
  return "InferDesk bench-serve";
}

// A number of a JSON list (0 when it is not one).
double at(const Json& list, size_t i) {
  return list.is_array() && i < list.size() && list[i].is_number() ? list[i].get<double>() : 0;
}

// vLLM's per-request lists, when the file has them (it may not: they are optional there).
std::vector<RequestRecord> vllm_records(const Json& j) {
  std::vector<RequestRecord> out;
  if (!j.is_object() || !j.contains("ttfts") || !j["ttfts"].is_array() || !j.contains("latencies")) return out;
  const Json& ttfts = j["ttfts"];
  const Json empty = Json::array();
  auto list = [&](const char* key) -> const Json& { return j.contains(key) && j[key].is_array() ? j[key] : empty; };
  const Json &lat = list("latencies"), &starts = list("start_times"), &itls = list("itls"), &outs = list("output_lens"),
             &ins = list("input_lens"), &errors = list("errors");
  for (size_t i = 0; i < ttfts.size(); ++i) {
    RequestRecord r;
    r.start_s = at(starts, i);
    r.ttft_s = at(ttfts, i);
    r.latency_s = at(lat, i);
    r.output_tokens = static_cast<int64_t>(at(outs, i));
    r.prompt_tokens = static_cast<int64_t>(at(ins, i));
    r.error = i < errors.size() && errors[i].is_string() ? errors[i].get<std::string>() : "";
    r.success = r.error.empty() && r.latency_s > 0;
    if (r.success) {
      double t = r.start_s + r.ttft_s;
      r.chunk_s.push_back(t);
      if (i < itls.size() && itls[i].is_array())
        for (const Json& gap : itls[i])
          if (gap.is_number()) r.chunk_s.push_back(t += gap.get<double>());
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string engine_of(const bench::RunInfo& info) {
  // "openai" names the protocol, not the engine.
  const std::string& b = info.backend;
  if (b.empty() || b.rfind("openai", 0) == 0) return {};
  return b;
}

DashboardPoint point_of(const bench::ImportedResult& r, const Json* original) {
  DashboardPoint p;
  p.concurrency = r.info.max_concurrency;
  if (std::isfinite(r.info.request_rate) && r.info.request_rate > 0) p.request_rate = r.info.request_rate;
  p.summary = bench::to_json(r.summary);
  p.summary["max_concurrency"] = r.info.max_concurrency;
  if (!r.info.label.empty()) p.summary["label"] = r.info.label;
  if (r.raw) {
    for (const auto& q : r.raw->requests) p.requests.push_back(record_of(q));
  } else if (original && r.tool == "vllm") {
    p.requests = vllm_records(*original);
  }
  return p;
}

Json read_json(const QString& path) {
  QFile f(path);
  if (!f.exists()) throw Error(ErrorCode::NotFound, path.toStdString() + " does not exist");
  if (!f.open(QIODevice::ReadOnly)) throw Error(ErrorCode::Io, "could not read " + path.toStdString());
  Json j = Json::parse(f.readAll().toStdString(), nullptr, false);
  if (j.is_discarded()) throw Error(ErrorCode::Format, path.toStdString() + " is not valid JSON");
  return j;
}

}  // namespace

DashboardRun run_from_result_file(const QString& path) {
  const Json j = read_json(path);
  if (j.is_object() && j.contains("points") && j.contains("workload")) {  // the dashboard's own export
    QFile f(path);
    f.open(QIODevice::ReadOnly);
    return import_json(f.readAll().toStdString());
  }
  const std::vector<bench::ImportedResult> results = bench::parse_result(j);
  if (results.empty()) throw Error(ErrorCode::Format, path.toStdString() + " holds no benchmark results");
  const bench::ImportedResult& first = results.front();
  DashboardRun run;
  run.label = QFileInfo(path).completeBaseName().toStdString() + " (" + tool_name(first.tool) + ")";
  run.endpoint_name = tool_name(first.tool);
  run.base_url = first.info.base_url;
  run.model = first.info.model_id;
  run.engine = engine_of(first.info);
  run.workload = {{"imported_from", QFileInfo(path).fileName().toStdString()},
                  {"tool", first.tool},
                  {"num_prompts", first.info.num_prompts}};
  run.machine = {{"note", "imported: the machine is not recorded in the file"}};
  run.status = "complete";
  run.started_at = run.finished_at = QDateTime::currentMSecsSinceEpoch();
  // A list of vLLM-shaped results (our sweeps) keeps each element for its per-request lists.
  double offset = 0;  // points follow each other on the run's time line
  for (size_t i = 0; i < results.size(); ++i) {
    const Json* original = j.is_array() && i < j.size() ? &j[i] : (j.is_object() ? &j : nullptr);
    run.points.push_back(point_of(results[i], original));
    run.points.back().offset_s = offset;
    offset += results[i].summary.duration_s;
  }
  return run;
}

}  // namespace inferdesk::gui
