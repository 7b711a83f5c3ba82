#include "cuda/kernels/common.cuh"
#include "cuda/kernels/launch.h"

#include <array>
#include <atomic>

namespace inferdesk::cuda {

void check_launch(const char* what) { check_launch(what, cudaGetLastError()); }

void check_launch(const char* what, cudaError_t launched) {
  if (launched == cudaSuccess) return;
  (void)cudaGetLastError();  // clear the sticky slot so a later check does not report it again
  throw Error(ErrorCode::Internal, std::string(what) + ": CUDA launch failed: " + cudaGetErrorString(launched));
}

void unsupported_config(const std::string& what) {
  throw Error(ErrorCode::Internal, "CUDA kernel configuration not implemented: " + what);
}

namespace {

std::array<std::atomic<int8_t>, kMaxDevices> g_pdl_capable{};

bool compute_capability_9(int dev) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return major >= 9;
}

}  // namespace

bool once_per_device(std::array<std::atomic<int8_t>, kMaxDevices>& cache, bool (*probe)(int device)) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    (void)cudaGetLastError();
    return false;
  }
  int8_t known = cache[dev].load(std::memory_order_relaxed);  // 0: not asked yet, 1: no, 2: yes
  if (known == 0) {
    known = probe(dev) ? 2 : 1;
    cache[dev].store(known, std::memory_order_relaxed);
  }
  return known == 2;
}

bool pdl_supported() { return once_per_device(g_pdl_capable, compute_capability_9); }

bool uses_pdl(const Launch& launch) { return launch.pdl && pdl_supported(); }

}  // namespace inferdesk::cuda
