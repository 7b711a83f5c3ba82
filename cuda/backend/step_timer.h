// CudaTuning::step_timing: per step, on the stream, the time from begin_step to the end of the
// forward, from there to the sampled ids, and the stream's idle time before the step, against the
// wall time between steps; summed and printed when the backend is destroyed. Events live in a ring
// and are read kRing steps later, so timing never waits for the GPU.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

#include "cuda/backend/cuda_handles.h"

namespace inferdesk::cuda {

class StepTimer {
 public:
  StepTimer(cudaStream_t stream, bool enabled);
  ~StepTimer();  // prints the sums
  void step_begun();
  void forward_enqueued();
  void sampling_enqueued();

 private:
  static constexpr int kRing = 8;
  struct StepEvents {
    UniqueEvent start, forward, end;
    bool forward_set = false, end_set = false;
  };
  StepEvents& current() { return ring_[(begun_ - 1) % kRing]; }
  // Adds the steps before `until` not yet added (their slots, and the previous step's, intact).
  void account(int64_t until);

  cudaStream_t stream_;
  bool enabled_;
  StepEvents ring_[kRing];  // step i in slot i % kRing
  int64_t begun_ = 0;
  int64_t accounted_ = 0;  // steps [0, this) added to the sums
  double forward_ms_ = 0, sampling_ms_ = 0, gap_ms_ = 0, wall_ms_ = 0;
  int64_t timed_steps_ = 0, timed_gaps_ = 0;
  std::chrono::steady_clock::time_point last_wall_{};
};

}  // namespace inferdesk::cuda
