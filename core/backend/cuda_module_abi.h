// The entry point of the CUDA backend module (libinferdesk-cuda.so), as the programs that load
// it with dlopen see it. The module and the programs are built from the same sources with the
// same compiler, so the table passes C++ types; `abi` guards against a module of another build
// (a hash of the headers whose layouts cross the boundary, computed by CMake).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cuda_options.h"

namespace inferdesk {

struct CudaModuleApi {
  const char* abi;      // must equal the loader's INFERDESK_CUDA_MODULE_ABI
  const char* version;  // the project version the module was built as
  // What the module was compiled for, e.g. "sm_90 (+ sm_90a kernels)".
  const char* architectures;
  // Whether a GPU can run this module's kernels; *reason says why not (no driver, no GPU, driver
  // too old, architecture not compiled). Fills *devices with what the runtime sees. Never throws.
  bool (*probe)(std::string* reason, std::vector<GpuDeviceInfo>* devices);
  // A new backend, or null with *error set (and *code its ErrorCode). Never throws.
  Backend* (*create)(const CudaBackendOptions* options, std::string* error, int* code);
};

}  // namespace inferdesk

// The one symbol the module exports.
extern "C" const inferdesk::CudaModuleApi* inferdesk_cuda_module_api();
inline constexpr const char* kCudaModuleEntrySymbol = "inferdesk_cuda_module_api";
