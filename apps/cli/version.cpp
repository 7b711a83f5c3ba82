#include "apps/cli/version.h"

#include "apps/cli/build_info.h"
#include "core/backend/cpu/cpu_backend.h"

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
#ifdef INFERDESK_HAVE_CUDA
  text += "; cuda: the CUDA backend is part of this build";
#else
  text += "; cuda: not part of this build";
#endif
  return text;
}

}  // namespace inferdesk::cli
