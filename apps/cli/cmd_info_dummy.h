// `info --dummy SHAPE`: see cmd_info_dummy.cpp.
#pragma once

#include <cstdint>
#include <string>

namespace inferdesk::cli {

void run_info_dummy(const std::string& shape, const std::string& quantization, bool quantize_lm_head, int64_t context,
                    bool json);

}  // namespace inferdesk::cli
