// How a kernel launcher enqueues its work: the Launch every launcher of cuda/kernels takes (the
// stream, and whether its kernels use programmatic dependent launch). The launchers themselves are
// declared one header per op family (elementwise.h, gemv.h, ...; their types in common.h).
//
// Every launcher takes `const Launch& launch` and only enqueues work on launch.stream (no
// allocation, no synchronisation, no host reads of device data), so every one of them may be
// captured in a CUDA graph. Sizes are validated by the caller; launchers throw
// inferdesk::Error(Internal) only for a configuration they do not implement (e.g. a head_dim
// without an instantiation) and for launch errors.
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
