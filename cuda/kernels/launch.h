// How a kernel launcher enqueues its work: every launcher of cuda/kernels takes a Launch (the
// stream, and whether its kernels use programmatic dependent launch) as `const Launch& launch`.
#pragma once

#include <cuda_runtime.h>

namespace inferdesk::cuda {

// The stream the launches go to, and whether they use programmatic dependent launch (PDL): a
// kernel may then be scheduled (and prefetch weights) while its predecessor on the stream drains.
// PDL takes effect on devices of compute capability >= 9.0 only (uses_pdl); elsewhere, or with
// pdl false, the launches are plain stream-ordered ones. Captured into a CUDA graph, a PDL launch
// becomes a programmatic edge.
struct Launch {
  cudaStream_t stream = nullptr;
  bool pdl = false;
};

// Whether the current device supports PDL (compute capability >= 9.0; asked once per device).
bool pdl_supported();
// Whether launches through `launch` on the current device use PDL: launch.pdl && pdl_supported().
bool uses_pdl(const Launch& launch);

}  // namespace inferdesk::cuda
