// The CUDA backend's options as `key=value` text: what `--cuda-option` parses at the CLI and GUI
// edge, what `--help` lists and what `bench --json` echoes. No CUDA here (core links no CUDA).
#pragma once

#include <string>
#include <vector>

#include "core/backend/cuda_options.h"

namespace inferdesk {

struct CudaOptionInfo {
  std::string key;
  std::string help;
  std::string value;  // as text: "1"/"0" for switches
};

// Every settable option with its value in `o` (the defaults for a default-constructed one).
std::vector<CudaOptionInfo> cuda_option_list(const CudaBackendOptions& o = {});

// Sets one option from "key=value" (switches take 1/0, true/false, on/off). Throws
// Error(InvalidArgument) naming the known keys for an unknown key, or the range for a bad value.
void apply_cuda_option(CudaBackendOptions& o, const std::string& key_value);

// The listing for --help: one "  key=default  help" line per option.
std::string cuda_option_help();

}  // namespace inferdesk
