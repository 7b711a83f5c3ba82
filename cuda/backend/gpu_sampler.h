// Sampling on the GPU: each row's parameters and penalty token lists packed on the host, one
// upload, the sampling kernels on the compute stream, one download of ids and log-probabilities.
// A launch and its collection are apart so the engine can launch the next decode step between
// them (Backend::can_chain_steps); two launches may be outstanding, each in its own pinned buffer
// and device slot, and the copies run on their own stream, off the compute stream.
#pragma once

#include <deque>
#include <vector>

#include "core/backend/backend.h"
#include "cuda/backend/context.h"
#include "cuda/backend/step_timer.h"

namespace inferdesk::cuda {

class GpuSampler {
 public:
  GpuSampler(CudaContext& ctx, StepTimer& timer, bool copy_stream);
  void launch(const Tensor& logits, const std::vector<SampleRow>& rows);
  void collect(std::vector<SampledToken>& out);
  void abort();
  bool pending() const { return !pending_.empty(); }
  // The token ids of the last launch, on the device (null when it sampled nothing), and its rows.
  const int32_t* last_tokens() const { return last_tokens_; }
  int32_t last_rows() const { return last_rows_; }

 private:
  struct Pending {
    int slot = 0;
    int32_t rows = 0, vocab = 0;
    size_t in_bytes = 0, out_tok = 0, out_lp = 0, out_top = 0;  // host/device layout
    std::vector<int32_t> num_logprobs;                          // per row
  };
  // Device slots of at least `slot_need` bytes and a workspace of `workspace_need`.
  void reserve(size_t slot_need, size_t workspace_need);

  CudaContext& ctx_;
  StepTimer& timer_;
  UniqueStream copies_;  // null: the copies run on the compute stream
  cudaStream_t copy_stream_;
  DeviceBuffer workspace_;
  DeviceBuffer io_;  // two slots of [parameters | penalty tokens | penalty counts | outputs]
  size_t slot_bytes_ = 0;
  PinnedBuffer host_[2];
  UniqueEvent params_up_[2], computed_[2], done_[2];
  std::deque<Pending> pending_;  // oldest first
  int next_slot_ = 0;
  const int32_t* last_tokens_ = nullptr;
  int32_t last_rows_ = 0;
};

}  // namespace inferdesk::cuda
