// What every part of the CUDA backend shares: the device, the compute stream and how kernels are
// launched on it, device memory, and the graph runner (a capture forbids allocations and uploads).
// CudaBackend owns one; each part holds a reference.
#pragma once

#include <cuda_runtime.h>

#include "core/backend/backend.h"
#include "core/backend/cuda_options.h"
#include "cuda/backend/cuda_handles.h"
#include "cuda/backend/device_memory.h"
#include "cuda/backend/graph_runner.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

struct CudaContext {
  explicit CudaContext(const CudaBackendOptions& options);

  int device = 0;
  int sm_count = 0;
  UniqueStream compute;
  cudaStream_t stream = nullptr;  // compute.get(): every op's kernels run here, in order
  Launch launch;                  // the stream and programmatic dependent launch, for kernels
  DeviceMemory memory;
  GraphRunner graphs;

  // Waits for the compute stream; a failed kernel becomes an Error.
  void synchronize() const;
};

// A tensor as the kernels see it (F32 or BF16; Error(Internal) otherwise).
Mat as_mat(const Tensor& t);
// The data of a BF16 tensor; Error(Internal) naming `what` otherwise.
const bf16* bf16_ptr(const Tensor& t, const char* what);

}  // namespace inferdesk::cuda
