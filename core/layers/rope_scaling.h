// Rotary-embedding scaling as a config.json's rope_scaling (or rope_parameters) describes it.
#pragma once

#include <cstdint>
#include <string>

namespace inferdesk {

struct RopeScaling {
  std::string type;  // "" (none), "linear", "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

}  // namespace inferdesk
