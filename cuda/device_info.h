// Which CUDA devices this process can use. Plain C++ header: no CUDA types leak into callers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/cuda_options.h"  // GpuDeviceInfo

namespace inferdesk::cuda {

using DeviceInfo = GpuDeviceInfo;

// Devices visible to the CUDA runtime. Empty (and *reason set) when there is no driver or GPU.
std::vector<DeviceInfo> list_devices(std::string* reason);

}  // namespace inferdesk::cuda
