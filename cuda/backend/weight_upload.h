// Weights from the host (mmapped checkpoint tensors) to the GPU in BF16: through two pinned
// staging chunks, so the copy of one chunk overlaps the host copy of the next; F16 and F32 are
// converted on the GPU. FP8 (E4M3) weights keep their bytes; their F32 scales are uploaded as
// they are (load_scales).
#pragma once

#include <vector>

#include "core/backend/backend.h"
#include "cuda/backend/context.h"
#include "cuda/kernels/common.h"

namespace inferdesk::cuda {

class WeightUploader {
 public:
  explicit WeightUploader(CudaContext& ctx);
  // The parts stacked row-wise into one BF16 [rows, cols] weight; E4M3 parts (all of them, then)
  // into one E4M3 weight.
  Buffer load_rows(const std::vector<HostTensor>& parts, int64_t cols);
  // F32 [rows, cols] values (quantization scales) in device memory.
  Buffer load_scales(const float* values, int64_t rows, int64_t cols);
  // A host staging buffer of at least `bytes` for a device-to-host copy (to_host).
  void* host_staging(size_t bytes) { return staging_[0].get(bytes); }

 private:
  // host converted to BF16 at dst, or its bytes as they are (raw: E4M3).
  void upload(const HostTensor& host, void* dst, bool raw);

  CudaContext& ctx_;
  PinnedBuffer staging_[2];
  UniqueEvent staging_done_[2];
  DeviceBuffer convert_scratch_;  // the raw F16/F32 chunks before conversion
};

}  // namespace inferdesk::cuda
