#include "core/bench/result_io.h"

#include <cmath>
#include <ctime>
#include <fstream>

#include "core/util/error.h"

namespace inferdesk::bench {

std::string now_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

namespace {

nlohmann::ordered_json rate_json(double rate) {
  return std::isinf(rate) ? nlohmann::ordered_json("inf") : nlohmann::ordered_json(rate);
}

nlohmann::ordered_json raw_json(const LoadResult& run) {
  nlohmann::ordered_json reqs = nlohmann::ordered_json::array();
  for (const RequestResult& r : run.requests) {
    reqs.push_back({{"success", r.success},     {"aborted", r.aborted},       {"cancelled", r.cancelled},
                    {"http_status", r.http_status}, {"error", r.error},       {"start_s", r.start_s},
                    {"ttft_s", r.ttft_s},       {"latency_s", r.latency_s},   {"chunk_s", r.chunk_s},
                    {"prompt_tokens", r.prompt_tokens}, {"output_tokens", r.output_tokens},
                    {"chunks", r.chunks},       {"finish_reason", r.finish_reason}});
  }
  return {{"version", 1}, {"duration_s", run.duration_s}, {"max_concurrent", run.max_concurrent}, {"requests", reqs}};
}

}  // namespace

nlohmann::ordered_json result_json(const RunInfo& info, const LoadResult& run, const std::vector<BenchRequest>& requests,
                                   const BenchSummary& s, const std::vector<int64_t>& output_lens) {
  nlohmann::ordered_json j;
  j["date"] = info.date;
  j["backend"] = info.backend;
  j["label"] = info.label;
  j["model_id"] = info.model_id;
  j["tokenizer_id"] = info.tokenizer_id;
  j["base_url"] = info.base_url;
  j["endpoint"] = info.endpoint;
  j["num_prompts"] = info.num_prompts;
  j["request_rate"] = rate_json(info.request_rate);
  j["burstiness"] = info.burstiness;
  j["max_concurrency"] = info.max_concurrency > 0 ? nlohmann::ordered_json(info.max_concurrency) : nullptr;
  if (info.prompt_seed) j["prompt_seed"] = *info.prompt_seed;
  if (!info.prompt_note.empty()) j["prompt_note"] = info.prompt_note;
  const nlohmann::ordered_json summary = to_json(s);  // named: items() must not outlive a temporary
  for (const auto& [k, v] : summary.items()) j[k] = v;
  const std::vector<int64_t> ins = input_lengths(run, requests);
  auto& in = j["input_lens"] = nlohmann::ordered_json::array();
  auto& out = j["output_lens"] = nlohmann::ordered_json::array();
  auto& ttfts = j["ttfts"] = nlohmann::ordered_json::array();
  auto& itls = j["itls"] = nlohmann::ordered_json::array();
  auto& lat = j["latencies"] = nlohmann::ordered_json::array();
  auto& starts = j["start_times"] = nlohmann::ordered_json::array();
  auto& texts = j["generated_texts"] = nlohmann::ordered_json::array();
  auto& errors = j["errors"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RequestResult& r = run.requests[i];
    in.push_back(ins[i]);
    out.push_back(i < output_lens.size() ? output_lens[i] : 0);
    ttfts.push_back(r.ttft_s);
    itls.push_back(r.itl_s);
    lat.push_back(r.latency_s);
    starts.push_back(r.start_s);
    texts.push_back(r.text);
    errors.push_back(r.error);
  }
  j["inferdesk_raw"] = raw_json(run);
  return j;
}

void write_json_file(const std::filesystem::path& path, const nlohmann::ordered_json& j) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::Io, "cannot write " + tmp.string());
    f << j.dump(2) << "\n";
    f.flush();
    if (!f) throw Error(ErrorCode::Io, "cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error(ErrorCode::Io, "cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

}  // namespace inferdesk::bench
