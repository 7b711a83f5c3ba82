// hopper_kernels_available(): whether the current device runs this folder's kernels, which are
// built for sm_90a alone (cuda/CMakeLists.txt). A probe kernel built the same way reports it.
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/sm90a/wide_gemm.h"

namespace inferdesk::cuda {
namespace {

__global__ void hopper_probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

std::array<std::atomic<int8_t>, kMaxDevices> g_available{};

// Whether `dev` (the current device) runs the sm_90a image: on a device without one the launch
// fails with "no kernel image", which is an answer, not an error.
bool runs_sm90a(int dev) {
  (void)dev;
  int* d = nullptr;
  int h = 0;
  if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  hopper_probe_kernel<<<1, 1>>>(d);
  const bool ok = cudaGetLastError() == cudaSuccess &&
                  cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess && h == 1;
  cudaFree(d);
  (void)cudaGetLastError();
  return ok;
}

}  // namespace

bool hopper_kernels_available() { return once_per_device(g_available, runs_sm90a); }

}  // namespace inferdesk::cuda
