// A step's metadata (token ids, positions, slots, logit rows, per-sequence query and context
// lengths, block tables) at fixed device addresses, so captured graphs read the current step's
// values. Packed on the host in the device layout and uploaded in one copy on its own stream once
// the previous forward no longer reads the buffers, so the upload overlaps that step's sampling.
#pragma once

#include <cstdint>

#include "core/backend/backend.h"
#include "cuda/backend/context.h"

namespace inferdesk::cuda {

// One packed int32 array; capacities only grow (moving it invalidates the graphs).
struct StepBuffers {
  int32_t max_tokens = 0, max_seqs = 0, max_blocks = 0;
  int32_t* token_ids = nullptr;
  int32_t* positions = nullptr;
  int32_t* slots = nullptr;
  int32_t* logit_rows = nullptr;
  int32_t* query_start = nullptr;
  int32_t* query_len = nullptr;
  int32_t* context_len = nullptr;
  int32_t* block_table_start = nullptr;
  int32_t* block_tables = nullptr;
  size_t head_ints() const { return static_cast<size_t>(max_tokens) * 4 + static_cast<size_t>(max_seqs) * 4; }
};

class StepUploader {
 public:
  explicit StepUploader(CudaContext& ctx);
  // Uploads `step` padded to `rows` token rows and `num_seqs` sequences (padding rows: token 0,
  // no KV write, in empty sequences). Enqueued before the step's forward on the compute stream.
  void upload(const StepInput& step, int32_t rows, int32_t num_seqs);
  // The step's tokens are `n` ids already on the device (the last sampling's), in stream order.
  void take_tokens(const int32_t* device_ids, int32_t n);
  // The step's forward is enqueued: the next upload waits for it (and a failed step, which never
  // gets here, makes the next upload run on the compute stream behind its kernels).
  void forward_enqueued();
  const StepBuffers& buffers() const { return sb_; }

 private:
  void ensure_capacity(int32_t tokens, int32_t seqs, int32_t blocks);
  int32_t* pack(const StepInput& step, int32_t rows, int32_t num_seqs);

  CudaContext& ctx_;
  StepBuffers sb_;
  DeviceBuffer device_;
  PinnedBuffer host_;
  UniqueStream stream_;
  UniqueEvent uploaded_;      // the last upload finished reading host_
  UniqueEvent forward_done_;  // the last forward no longer reads the buffers
  bool upload_pending_ = false;
  bool forward_recorded_ = false;
  bool step_open_ = false;  // between upload and forward_enqueued (still set: that step failed)
};

}  // namespace inferdesk::cuda
