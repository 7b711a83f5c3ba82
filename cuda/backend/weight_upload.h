// Weights from the host (mmapped checkpoint tensors) to the GPU in BF16: through two pinned
// staging chunks, so the copy of one chunk overlaps the host copy of the next; F16 and F32 are
// converted on the GPU.
#pragma once

#include <vector>

#include "core/backend/backend.h"
#include "cuda/backend/context.h"
#include "cuda/kernels/common.h"

namespace inferdesk::cuda {

class WeightUploader {
 public:
  explicit WeightUploader(CudaContext& ctx);
  // The parts stacked row-wise into one BF16 [rows, cols] weight.
  Buffer load_rows(const std::vector<HostTensor>& parts, int64_t cols);
  // A host staging buffer of at least `bytes` for a device-to-host copy (to_host).
  void* host_staging(size_t bytes) { return staging_[0].get(bytes); }

 private:
  void upload(const HostTensor& host, bf16* dst);

  CudaContext& ctx_;
  PinnedBuffer staging_[2];
  UniqueEvent staging_done_[2];
  DeviceBuffer convert_scratch_;  // the raw F16/F32 chunks before conversion
};

}  // namespace inferdesk::cuda
