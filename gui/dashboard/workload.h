// The dashboard's workload: vLLM's random dataset (token-id prompts of a fixed length, ignore_eos
// so every request yields output_len tokens), swept over maximum concurrency. Presets are the
// issue's: chat 550/150, long prompt 2,048/128, offline 128/128 at max concurrency, sweep 1→256.
#pragma once

#include <QString>

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace inferdesk::gui {

struct WorkloadSpec {
  QString preset;
  int input_len = 128, output_len = 128;
  int requests_per_point = 16;
  std::vector<int> concurrencies{1};  // 0: no cap (offline)
  uint64_t seed = 0;
  int token_id_max = 10000;  // prompts use ids below this (a vocabulary every target has)
};

struct WorkloadPreset {
  QString name;
  WorkloadSpec spec;
};

std::vector<WorkloadPreset> workload_presets();
nlohmann::json to_json(const WorkloadSpec& w);
// "1,2,4" -> {1,2,4}; empty when any part is not a whole number >= 0.
std::vector<int> parse_concurrencies(const QString& text);
QString concurrencies_text(const std::vector<int>& c);

}  // namespace inferdesk::gui
