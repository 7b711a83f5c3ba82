// Which backends this build and this machine offer, and creating one by name ("cpu", "cuda").
// CUDA is offered only where the CUDA backend module (libinferdesk-cuda.so, core/backend/cuda_module.h)
// opens and a GPU it can run on is present; otherwise `reason` says why, for the model manager.
#pragma once

#include <QString>
#include <QStringList>

#include <memory>

#include "core/backend/backend.h"
#include "core/backend/cuda_options.h"

namespace inferdesk::gui {

struct CudaStatus {
  bool built = false;      // the CUDA backend module was found and opened
  bool usable = false;     // built, a GPU is present, and models can be loaded on it
  QString reason;          // why not usable ("" when usable)
  QStringList devices;     // "NVIDIA H200 (139.8 GiB, sm_90)"
  qint64 free_memory = 0;  // of device 0, bytes
  qint64 total_memory = 0;
};

// Queries the CUDA runtime (cheap after the first call). Never throws.
CudaStatus cuda_status();

// Creates a backend. Throws Error(Unsupported / InvalidArgument) with a message for the user.
std::unique_ptr<Backend> make_backend_by_name(const QString& name, const CudaBackendOptions& cuda = {});

}  // namespace inferdesk::gui
