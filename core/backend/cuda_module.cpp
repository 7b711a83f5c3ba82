#include "core/backend/cuda_module.h"

#include <dlfcn.h>

#include <cstring>
#include <system_error>

#include "core/backend/cuda_module_abi.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

std::string joined(const std::vector<std::filesystem::path>& dirs) {
  std::string s;
  for (const auto& d : dirs) s += (s.empty() ? "" : ", ") + d.string();
  return s.empty() ? "no folder" : s;
}

std::filesystem::path find_module(const std::vector<std::filesystem::path>& dirs) {
  for (const auto& d : dirs) {
    std::error_code ec;
    const auto p = d / kCudaModuleFileName;
    if (std::filesystem::is_regular_file(p, ec)) return p;
  }
  return {};
}

}  // namespace

std::string describe_module_load_error(const std::string& text) {
  // glibc: "<file>: <needed lib>: cannot open shared object file: No such file or directory",
  // where <file> is the module itself when the module is the one missing.
  const std::string marker = ": cannot open shared object file";
  const size_t end = text.find(marker);
  if (end != std::string::npos) {
    const size_t sep = text.rfind(": ", end == 0 ? 0 : end - 1);
    const std::string lib = text.substr(sep == std::string::npos ? 0 : sep + 2,
                                        end - (sep == std::string::npos ? 0 : sep + 2));
    if (lib.find(kCudaModuleFileName) == std::string::npos)
      return lib + " not found: install the inferdesk-cuda package (it brings the CUDA libraries "
                   "the CUDA backend needs)";
  }
  return "cannot open the CUDA backend module: " + text;
}

CudaModule CudaModule::load(const std::vector<std::filesystem::path>& dirs) {
  CudaModule m;
  m.path_ = find_module(dirs);
  if (m.path_.empty()) {
    m.reason_ = std::string("the CUDA backend is not installed (") + kCudaModuleFileName + " is not in " +
                joined(dirs) + "): install the inferdesk-cuda package";
    return m;
  }
  dlerror();
  void* handle = dlopen(m.path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    m.reason_ = describe_module_load_error(why ? why : "unknown dlopen error");
    return m;
  }
  using Entry = const CudaModuleApi* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaModuleEntrySymbol));
  const CudaModuleApi* api = entry ? entry() : nullptr;
  if (!api) {
    m.reason_ = m.path_.string() + " is not an InferDesk CUDA backend module (no entry point)";
    dlclose(handle);
    return m;
  }
  if (std::strcmp(api->abi, INFERDESK_CUDA_MODULE_ABI) != 0) {
    m.reason_ = m.path_.string() + " belongs to another build of InferDesk (module " + api->version +
                ", this program " + INFERDESK_VERSION +
                "): install the inferdesk-cuda package of the same version as inferdesk";
    dlclose(handle);
    return m;
  }
  m.api_ = api;
  m.architectures_ = api->architectures;
  std::string why;
  m.usable_ = api->probe(&why, &m.devices_);
  if (!m.usable_) m.reason_ = why.empty() ? "the CUDA backend cannot use this machine's GPU" : why;
  return m;
}

std::unique_ptr<Backend> CudaModule::create(const CudaBackendOptions& options) const {
  if (!usable_) throw Error(ErrorCode::Unsupported, "CUDA is not available: " + reason_);
  std::string error;
  int code = static_cast<int>(ErrorCode::Internal);
  Backend* b = api_->create(&options, &error, &code);
  if (!b) {
    const bool known = code >= 0 && code <= static_cast<int>(ErrorCode::Internal);
    throw Error(known ? static_cast<ErrorCode>(code) : ErrorCode::Internal, error);
  }
  return std::unique_ptr<Backend>(b);
}

}  // namespace inferdesk
