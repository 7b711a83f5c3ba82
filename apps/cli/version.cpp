#include "apps/cli/version.h"

#include "apps/cli/build_info.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cuda_module.h"
#include "core/util/install_layout.h"

namespace inferdesk::cli {

namespace {

// The CPU backend picks its kernels at run time; naming them tells a user what this machine gets.
const char* cpu_kernels() {
  if (cpu_isa_supported(CpuIsa::Avx512)) return "AVX-512";
  if (cpu_isa_supported(CpuIsa::Avx2)) return "AVX2";
  return "portable C++";
}

}  // namespace

std::string version_text() {
  std::string text = std::string("inferdesk-cli ") + INFERDESK_VERSION;
  if (INFERDESK_GIT_COMMIT[0] != '\0') text += std::string(" (commit ") + INFERDESK_GIT_COMMIT + ")";
  text += std::string("\nbackends: cpu (") + cpu_kernels() + " kernels on this machine)";
  // The CUDA backend is a module opened at run time: say what this machine makes of it.
  const CudaModule cuda = CudaModule::load(module_dirs(executable_path()));
  if (cuda.usable()) {
    const GpuDeviceInfo& d = cuda.devices().front();
    text += "\ncuda: " + d.name + " (sm_" + std::to_string(d.compute_major) + std::to_string(d.compute_minor) +
            "), module " + cuda.path().string() + ", built for " + cuda.architectures();
  } else {
    text += "\ncuda: not available: " + cuda.reason();
  }
  return text;
}

}  // namespace inferdesk::cli
