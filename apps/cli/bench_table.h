// `inferdesk-cli bench` without --json: the report as an aligned two-column table for a person
// (what ran, the rates, the latencies, the memory), with units. Read from the same JSON object
// --json prints, so the two never disagree.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "core/model/config.h"

namespace inferdesk::cli {

void print_bench_table(std::ostream& os, const nlohmann::json& report, const ModelConfig& config);

}  // namespace inferdesk::cli
