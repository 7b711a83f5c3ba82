#include <cuda_runtime.h>

#include "cuda/device_info.h"

namespace inferdesk::cuda {

std::vector<DeviceInfo> list_devices(std::string* reason) {
  std::vector<DeviceInfo> out;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (reason) *reason = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();
    return out;
  }
  if (count == 0 && reason) *reason = "the CUDA driver reports no GPU";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
      d.free_memory = static_cast<int64_t>(free_b);
    out.push_back(d);
  }
  return out;
}

}  // namespace inferdesk::cuda
