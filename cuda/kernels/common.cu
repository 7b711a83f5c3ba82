#include "cuda/kernels/common.cuh"

#include <array>
#include <atomic>

namespace inferdesk::cuda {

void check_launch(const char* what) { check_launch(what, cudaGetLastError()); }

void check_launch(const char* what, cudaError_t launched) {
  if (launched == cudaSuccess) return;
  (void)cudaGetLastError();  // clear the sticky slot so a later check does not report it again
  throw Error(ErrorCode::Internal,
              std::string(what) + ": CUDA launch failed: " + cudaGetErrorString(launched));
}

void unsupported_config(const std::string& what) {
  throw Error(ErrorCode::Internal, "CUDA kernel configuration not implemented: " + what);
}

namespace {

std::atomic<bool> g_pdl_requested{true};

// Per device: 0 = not looked up yet, 1 = compute capability < 9.0, 2 = >= 9.0.
constexpr int kMaxDevices = 64;
std::array<std::atomic<int8_t>, kMaxDevices> g_pdl_capable{};

bool device_supports_pdl() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    (void)cudaGetLastError();
    return false;
  }
  int8_t known = g_pdl_capable[dev].load(std::memory_order_relaxed);
  if (known == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    known = major >= 9 ? 2 : 1;
    g_pdl_capable[dev].store(known, std::memory_order_relaxed);
  }
  return known == 2;
}

}  // namespace

void set_pdl_enabled(bool on) { g_pdl_requested.store(on, std::memory_order_relaxed); }

bool pdl_enabled() { return g_pdl_requested.load(std::memory_order_relaxed) && device_supports_pdl(); }

}  // namespace inferdesk::cuda
