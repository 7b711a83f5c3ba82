// TEMPORARY (replaced by the kernels' own launch.h): how a kernel is launched.
#pragma once
#include <cuda_runtime.h>
namespace inferdesk::cuda {
struct Launch {
  cudaStream_t stream = nullptr;
  bool pdl = false;
  operator cudaStream_t() const { return stream; }
};
}  // namespace inferdesk::cuda
