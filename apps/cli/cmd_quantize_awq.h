// inferdesk-cli quantize --method awq: AWQ calibration saved as an AWQ folder, and the report of
// the in-app schemes (INT8 RTN, INT4 RTN, AWQ) against the folder as published.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "apps/cli/cli_common.h"

namespace inferdesk::cli {

struct AwqCliArgs {
  std::string model, out, calibration, text;
  int32_t tokens = 256, calibration_tokens = 512;
  bool json = false;
  BackendChoice backend;
};

nlohmann::json save_awq(const AwqCliArgs& a);
nlohmann::json report_schemes(const AwqCliArgs& a);

}  // namespace inferdesk::cli
