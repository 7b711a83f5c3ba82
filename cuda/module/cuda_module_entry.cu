// libinferdesk-cuda.so's entry point (core/backend/cuda_module_abi.h): probing the machine and
// creating CudaBackends for programs that opened the module with dlopen. Nothing here throws
// across the boundary; every failure becomes a sentence a user can act on.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <exception>
#include <string>
#include <vector>

#include "core/backend/cuda_module_abi.h"
#include "core/util/error.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_info.h"

namespace inferdesk::cuda {
namespace {

#define INFERDESK_STR2(...) #__VA_ARGS__
#define INFERDESK_STR(...) INFERDESK_STR2(__VA_ARGS__)

// nvcc's __CUDA_ARCH_LIST__ ("800,900") as "sm_80, sm_90".
std::string compiled_architectures() {
  std::string out, item;
  for (const char c : std::string(INFERDESK_STR(__CUDA_ARCH_LIST__)) + ",") {
    if (c != ',') {
      if (c != ' ') item += c;
      continue;
    }
    if (item.size() > 1) out += (out.empty() ? "sm_" : ", sm_") + item.substr(0, item.size() - 1);
    item.clear();
  }
  return out;
}
const std::string kArchitectures = compiled_architectures() + " (+ sm_90a kernels)";

// Compiled for the module's architectures only: a GPU for which it has no code fails to find it.
__global__ void probe_kernel() {}

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

// The runtime's own message for a missing driver ("CUDA driver version is insufficient") would
// mislead on a machine that has none, so the driver library is looked for first.
bool driver_installed() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  dlclose(h);
  return true;
}

bool probe_devices(std::string* reason, std::vector<GpuDeviceInfo>* devices) {
  if (!driver_installed()) {
    *reason = "no NVIDIA driver found (libcuda.so.1 is not installed)";
    return false;
  }
  int driver = 0;
  cudaDriverGetVersion(&driver);
  if (driver < CUDART_VERSION) {
    *reason = "the NVIDIA driver supports CUDA " + cuda_version_text(driver) + "; this CUDA backend needs CUDA " +
              cuda_version_text(CUDART_VERSION) + " or newer: update the NVIDIA driver";
    return false;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
    *reason = "no CUDA-capable GPU (the NVIDIA driver is installed but reports none)";
    return false;
  }
  if (e != cudaSuccess) {
    *reason = std::string("the CUDA runtime cannot use the GPU: ") + cudaGetErrorString(e);
    return false;
  }
  std::string why;
  *devices = list_devices(&why);
  if (devices->empty()) {
    *reason = why.empty() ? "no CUDA-capable GPU" : why;
    return false;
  }
  const GpuDeviceInfo& d = devices->front();
  const std::string arch = "sm_" + std::to_string(d.compute_major) + std::to_string(d.compute_minor);
  if (d.compute_major < 8) {
    *reason = d.name + " is " + arch + "; InferDesk's CUDA kernels need sm_80 (Ampere) or newer";
    return false;
  }
  cudaFuncAttributes attrs{};
  if (cudaFuncGetAttributes(&attrs, probe_kernel) != cudaSuccess) {
    cudaGetLastError();
    *reason = "this CUDA backend was built without code for " + d.name + " (" + arch + "; built for " + kArchitectures +
              "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(d.compute_major) +
              std::to_string(d.compute_minor) + " or install the packaged inferdesk-cuda";
    return false;
  }
  return true;
}

bool probe(std::string* reason, std::vector<GpuDeviceInfo>* devices) {
  try {
    return probe_devices(reason, devices);
  } catch (const std::exception& e) {
    *reason = e.what();
  } catch (...) {
    *reason = "unknown error while probing the GPU";
  }
  return false;
}

Backend* create(const CudaBackendOptions* options, std::string* error, int* code) {
  try {
    return make_cuda_backend(*options).release();
  } catch (const Error& e) {
    *error = e.what();
    *code = static_cast<int>(e.code());
  } catch (const std::exception& e) {
    *error = e.what();
    *code = static_cast<int>(ErrorCode::Internal);
  } catch (...) {
    *error = "unknown error while creating the CUDA backend";
    *code = static_cast<int>(ErrorCode::Internal);
  }
  return nullptr;
}

const CudaModuleApi kApi{INFERDESK_CUDA_MODULE_ABI, INFERDESK_VERSION, kArchitectures.c_str(), probe, create};

}  // namespace
}  // namespace inferdesk::cuda

extern "C" __attribute__((visibility("default"))) const inferdesk::CudaModuleApi* inferdesk_cuda_module_api() {
  return &inferdesk::cuda::kApi;
}
