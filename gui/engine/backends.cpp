#include "gui/engine/backends.h"

#include <string>

#include "core/backend/cuda_module.h"
#include "core/util/error.h"
#include "core/util/install_layout.h"

namespace inferdesk::gui {
namespace {

CudaModule open_cuda_module() { return CudaModule::load(module_dirs(executable_path())); }

}  // namespace

CudaStatus cuda_status() {
  CudaStatus s;
  const CudaModule cuda = open_cuda_module();
  s.built = cuda.api_loaded();
  for (const auto& d : cuda.devices())
    s.devices << QString("%1 (%2 GiB, sm_%3%4)")
                     .arg(QString::fromStdString(d.name))
                     .arg(d.total_memory / double(1LL << 30), 0, 'f', 1)
                     .arg(d.compute_major)
                     .arg(d.compute_minor);
  if (!cuda.devices().empty()) {
    s.free_memory = cuda.devices().front().free_memory;
    s.total_memory = cuda.devices().front().total_memory;
  }
  s.usable = cuda.usable();
  s.reason = QString::fromStdString(cuda.reason());
  return s;
}

std::unique_ptr<Backend> make_backend_by_name(const QString& name, const CudaBackendOptions& cuda_options) {
  if (name == "cpu") return make_cpu_backend(0);
  if (name == "cuda") {
    const CudaModule cuda = open_cuda_module();
    if (!cuda.usable())
      throw Error(ErrorCode::Unsupported, "CUDA is not available: " + cuda.reason() + "; load the model on the CPU");
    return cuda.create(cuda_options);
  }
  throw Error(ErrorCode::InvalidArgument, "unknown backend '" + name.toStdString() + "' (cpu, cuda)");
}

}  // namespace inferdesk::gui
