// Benchmark results as JSON files. Saving uses vLLM's --save-result field names (so vLLM's own
// plotting scripts read ours), plus our raw per-request timestamps under "inferdesk_raw" (sent,
// each content chunk's arrival, end) from which every metric can be recomputed. Loading reads
// our files back, and imports vLLM's, GenAI-Perf's (profile_export_genai_perf.json) and
// guidellm's (benchmarks.json) into the same summary type. Malformed files are Error(Format)
// naming the field, never an abort.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bench/bench_metrics.h"

namespace inferdesk::bench {

struct RunInfo {
  std::string date;  // "YYYYMMDD-HHMMSS", local time, as vLLM writes it
  std::string backend = "openai";
  std::string model_id, tokenizer_id, label, base_url, endpoint;
  int64_t num_prompts = 0;
  double request_rate = 0;  // inf: all at once
  double burstiness = 1;
  int32_t max_concurrency = 0;  // 0: none
  // The seed the point's prompts were drawn with ("prompt_seed"; files of other tools: none) and
  // why its prompts repeat when they do ("prompt_note").
  std::optional<uint64_t> prompt_seed;
  std::string prompt_note;
};

std::string now_date();  // the current local time in RunInfo::date's format

// vLLM's result object for one run; output_lens as output_lengths() counts them.
nlohmann::ordered_json result_json(const RunInfo& info, const LoadResult& run, const std::vector<BenchRequest>& requests,
                                   const BenchSummary& s, const std::vector<int64_t>& output_lens);
// Written to a temporary file beside `path`, then renamed over it. Throws Error(Io).
void write_json_file(const std::filesystem::path& path, const nlohmann::ordered_json& j);

struct ImportedResult {
  std::string tool;  // "inferdesk", "vllm", "genai-perf", "guidellm"
  RunInfo info;
  BenchSummary summary;
  std::optional<LoadResult> raw;  // our files only: the per-request timestamps
};

// Detects the format. One result per run (a guidellm file holds one per benchmark). Throws
// Error(NotFound / Io / Format).
std::vector<ImportedResult> load_result_file(const std::filesystem::path& path);
std::vector<ImportedResult> parse_result(const nlohmann::json& j);
ImportedResult parse_vllm_result(const nlohmann::json& j);
ImportedResult parse_genai_perf(const nlohmann::json& j);
std::vector<ImportedResult> parse_guidellm(const nlohmann::json& j);

}  // namespace inferdesk::bench
