#include "gui/engine/backends.h"

#include <string>

#include "core/util/error.h"

#ifdef INFERDESK_HAVE_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/device_info.h"
#endif

namespace inferdesk::gui {

CudaStatus cuda_status() {
  CudaStatus s;
#ifdef INFERDESK_HAVE_CUDA
  s.built = true;
  std::string why;
  const auto devices = cuda::list_devices(&why);
  for (const auto& d : devices)
    s.devices << QString("%1 (%2 GiB, sm_%3%4)")
                     .arg(QString::fromStdString(d.name))
                     .arg(d.total_memory / double(1LL << 30), 0, 'f', 1)
                     .arg(d.compute_major)
                     .arg(d.compute_minor);
  if (!devices.empty()) {
    s.free_memory = devices.front().free_memory;
    s.total_memory = devices.front().total_memory;
  }
  std::string backend_why;
  if (devices.empty())
    s.reason = QString::fromStdString(why.empty() ? "no CUDA device found" : why);
  else if (!cuda_backend_available(&backend_why))
    s.reason = QString::fromStdString(backend_why.empty() ? "the CUDA backend cannot use this GPU" : backend_why);
  s.usable = s.reason.isEmpty();
#else
  s.reason = "this build has no CUDA backend (nvcc was not found when it was compiled)";
#endif
  return s;
}

std::unique_ptr<Backend> make_backend_by_name(const QString& name) {
  if (name == "cpu") return make_cpu_backend(0);
  if (name == "cuda") {
#ifdef INFERDESK_HAVE_CUDA
    return make_cuda_backend();  // Error(Unsupported) with the reason when no GPU is usable
#else
    throw Error(ErrorCode::Unsupported,
                "CUDA is not available: " + cuda_status().reason.toStdString() +
                    "; load the model on the CPU");
#endif
  }
  throw Error(ErrorCode::InvalidArgument, "unknown backend '" + name.toStdString() + "' (cpu, cuda)");
}

}  // namespace inferdesk::gui
