// Finding and opening the CUDA backend module at run time, so a program built with CUDA still
// starts (and runs on the CPU) on a machine without the module, its CUDA libraries, a driver or a
// GPU, and can say which of those is missing.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cuda_options.h"

namespace inferdesk {

struct CudaModuleApi;

inline constexpr const char* kCudaModuleFileName = "libinferdesk-cuda.so";

class CudaModule {
 public:
  // Looks for kCudaModuleFileName in `dirs` (in order), opens the first one found and probes the
  // GPU. Never throws: what went wrong is in reason().
  static CudaModule load(const std::vector<std::filesystem::path>& dirs);

  // The module was found, opened and is of this build (whether or not a GPU is usable).
  bool api_loaded() const { return api_ != nullptr; }
  // A backend can be created: the module opened, a driver and a GPU it can run on are present.
  bool usable() const { return usable_; }
  // Why not usable, in words a user can act on ("no NVIDIA driver found", "libcublasLt.so.13 not
  // found: install the inferdesk-cuda package", ...). Empty when usable.
  const std::string& reason() const { return reason_; }
  // The module file that was opened (empty when none was found).
  const std::filesystem::path& path() const { return path_; }
  const std::vector<GpuDeviceInfo>& devices() const { return devices_; }
  // "sm_90 (+ sm_90a kernels)" when the module was opened.
  const std::string& architectures() const { return architectures_; }

  // Throws Error(Unsupported) with reason() when not usable, or the module's own error.
  std::unique_ptr<Backend> create(const CudaBackendOptions& options) const;

 private:
  // The module stays mapped for the life of the process: backends it created, and the deleters
  // of buffers they handed out, run its code.
  const CudaModuleApi* api_ = nullptr;
  bool usable_ = false;
  std::string reason_;
  std::filesystem::path path_;
  std::vector<GpuDeviceInfo> devices_;
  std::string architectures_;
};

// The reason dlopen gave, turned into words for a user: a missing dependency becomes
// "<lib> not found: install the inferdesk-cuda package". Exposed for tests.
std::string describe_module_load_error(const std::string& dlerror_text);

}  // namespace inferdesk
