#include "apps/cli/bench_table.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "apps/cli/units.h"
#include "core/engine/model_loader.h"

namespace inferdesk::cli {

namespace {

using Rows = std::vector<std::pair<std::string, std::string>>;

int64_t num(const nlohmann::json& j, const char* key) { return j.value(key, int64_t{0}); }
double real(const nlohmann::json& j, const char* key) { return j.value(key, 0.0); }

std::string rate(const nlohmann::json& j, const char* key) { return format_rate(real(j, key)) + " tok/s"; }

std::string latency(const nlohmann::json& j, const char* mean, const char* median, const char* p99) {
  return format_duration(real(j, mean)) + " mean, " + format_duration(real(j, median)) + " median, " +
         format_duration(real(j, p99)) + " p99";
}

// ", fp8 ..." when the weights or the KV cache are quantized.
std::string quant_part(const nlohmann::json& j) {
  std::string s;
  const std::string q = j.value("quantization", std::string("none"));
  if (q != "none") s += ", " + q;
  if (const std::string kv = j.value("kv_cache_dtype", std::string("auto")); kv != "auto") s += ", " + kv + " KV cache";
  return s;
}

std::string model_row(const nlohmann::json& j, const ModelConfig& c) {
  return j.value("model", std::string()) + " (" + c.model_type + ", " + std::to_string(c.num_hidden_layers) +
         " layers, hidden " + std::to_string(c.hidden_size) + ", " + format_count(count_parameters(c).total) +
         " parameters, " + format_bytes(num(j, "weight_bytes")) + " of weights" + quant_part(j) + ")";
}

std::string backend_row(const nlohmann::json& j) {
  const std::string name = j.value("backend", std::string());
  if (name != "cpu") return name;
  const int64_t threads = num(j, "threads");
  return threads > 0 ? "cpu, " + std::to_string(threads) + " threads" : "cpu, all cores";
}

std::string workload_row(const nlohmann::json& j) {
  const bool offline = j.value("mode", std::string()) == "offline";
  return std::string(offline ? "offline, " + std::to_string(num(j, "num_requests")) + " requests"
                             : "online, batch " + std::to_string(num(j, "batch"))) +
         ": " + std::to_string(num(j, "input_len")) + " prompt + " + std::to_string(num(j, "output_len")) +
         " output tokens each; " +
         (num(j, "repeat") == 1 ? std::string("one timed run")
                                : "median of " + std::to_string(num(j, "repeat")) + " timed runs");
}

// Host memory for every backend; device memory only where the backend has a device.
void memory_rows(const nlohmann::json& j, Rows& rows) {
  rows.emplace_back("host memory", format_bytes(num(j, "host_memory_used_bytes")) + " resident, " +
                                       format_bytes(num(j, "peak_rss_bytes")) + " at peak");
  if (j.contains("device_memory_total_bytes"))
    rows.emplace_back("device memory", format_bytes(num(j, "device_memory_used_bytes")) + " used of " +
                                           format_bytes(num(j, "device_memory_total_bytes")));
  rows.emplace_back("KV cache", format_bytes(num(j, "kv_cache_bytes")) + " reserved (blocks of " +
                                    std::to_string(num(j, "kv_block_size")) + " tokens)");
}

void moe_row(const nlohmann::json& j, Rows& rows) {
  if (!j.contains("moe_routing")) return;
  const auto& m = j["moe_routing"];
  rows.emplace_back("MoE routing", format_rate(real(m, "expected_distinct_experts_per_step")) + " of " +
                                       std::to_string(num(m, "experts")) +
                                       " experts per layer and step; busiest expert " +
                                       format_rate(real(m, "max_expert_load_over_mean")) + "x the mean load");
}

}  // namespace

void print_bench_table(std::ostream& os, const nlohmann::json& j, const ModelConfig& c) {
  Rows rows = {{"model", model_row(j, c)},
               {"backend", backend_row(j)},
               {"workload", workload_row(j)},
               {"prefill", rate(j, "prefill_tokens_per_s")},
               {"decode", rate(j, "decode_tokens_per_s")},
               {"output", rate(j, "output_tokens_per_s")},
               {"time to first token", latency(j, "time_to_first_token_s", "ttft_median_s", "ttft_p99_s")},
               {"time per output token", latency(j, "tpot_mean_s", "tpot_median_s", "tpot_p99_s")},
               {"time per run", format_duration(real(j, "wall_s"))},
               {"steps",
                std::to_string(num(j, "steps")) + " (" + std::to_string(num(j, "overlapped_steps")) + " overlapped)"}};
  memory_rows(j, rows);
  moe_row(j, rows);
  size_t width = 0;
  for (const auto& [label, value] : rows) width = std::max(width, label.size());
  for (const auto& [label, value] : rows) os << label << std::string(width + 2 - label.size(), ' ') << value << "\n";
  os.flush();
}

}  // namespace inferdesk::cli
