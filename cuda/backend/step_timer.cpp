#include "cuda/backend/step_timer.h"

#include <algorithm>
#include <cstdio>

namespace inferdesk::cuda {

StepTimer::StepTimer(cudaStream_t stream, bool enabled) : stream_(stream), enabled_(enabled) {
  if (!enabled_) return;
  for (StepEvents& e : ring_)
    for (UniqueEvent* ev : {&e.start, &e.forward, &e.end}) *ev = UniqueEvent::create(/*timing=*/true);
}

StepTimer::~StepTimer() {
  if (!enabled_) return;
  cudaStreamSynchronize(stream_);
  account(begun_);
  if (timed_steps_ == 0) return;
  std::fprintf(stderr,
               "cuda step timing: %lld steps; per step: forward %.4f ms, sampling %.4f ms, idle "
               "before the step %.4f ms (%lld gaps), wall %.4f ms\n",
               static_cast<long long>(timed_steps_), forward_ms_ / timed_steps_, sampling_ms_ / timed_steps_,
               timed_gaps_ > 0 ? gap_ms_ / timed_gaps_ : 0.0, static_cast<long long>(timed_gaps_),
               wall_ms_ / timed_steps_);
}

void StepTimer::step_begun() {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (begun_ > 0) wall_ms_ += std::chrono::duration<double, std::milli>(now - last_wall_).count();
  last_wall_ = now;
  // Steps up to kRing - 1 back (long done) are added before this step's slot, which held the step
  // kRing back (the previous one of the oldest added), is recorded again.
  account(begun_ - kRing + 2);
  StepEvents& e = ring_[begun_ % kRing];
  cudaEventRecord(e.start.get(), stream_);
  e.forward_set = e.end_set = false;
  ++begun_;
}

void StepTimer::forward_enqueued() {
  if (!enabled_ || begun_ == 0) return;
  cudaEventRecord(current().forward.get(), stream_);
  current().forward_set = true;
}

void StepTimer::sampling_enqueued() {
  if (!enabled_ || begun_ == 0) return;
  cudaEventRecord(current().end.get(), stream_);
  current().end_set = true;
}

void StepTimer::account(int64_t until) {
  for (; accounted_ < until; ++accounted_) {
    const int64_t i = accounted_;
    StepEvents& e = ring_[i % kRing];
    if (!e.forward_set || !e.end_set) continue;  // a step without sampling (or a failed one)
    float f = 0, sm = 0, g = 0;
    cudaEventSynchronize(e.end.get());
    cudaEventElapsedTime(&f, e.start.get(), e.forward.get());
    cudaEventElapsedTime(&sm, e.forward.get(), e.end.get());
    forward_ms_ += f;
    sampling_ms_ += sm;
    ++timed_steps_;
    const StepEvents& prev = ring_[(i + kRing - 1) % kRing];
    if (i > 0 && prev.end_set && cudaEventElapsedTime(&g, prev.end.get(), e.start.get()) == cudaSuccess) {
      gap_ms_ += std::max(0.0f, g);  // negative: this step was queued before the previous
      ++timed_gaps_;                 // sampling ended, so no idle time
    }
  }
}

}  // namespace inferdesk::cuda
