// Which CUDA devices this process can use. Plain C++ header: no CUDA types leak into callers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace inferdesk::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int64_t total_memory = 0;
  int64_t free_memory = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

// Devices visible to the CUDA runtime. Empty (and *reason set) when there is no driver or GPU.
std::vector<DeviceInfo> list_devices(std::string* reason);

}  // namespace inferdesk::cuda
