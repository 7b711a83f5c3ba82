// Owning handles for CUDA runtime objects (streams, events, pinned host memory), so the backend's
// parts free what they own by destruction, and check_cuda, which turns a CUDA error into an Error.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace inferdesk::cuda {

// Throws Error(Internal, or OutOfMemory) naming `what` when e is not cudaSuccess.
void check_cuda(cudaError_t e, const char* what);

class UniqueStream {
 public:
  UniqueStream() = default;
  static UniqueStream create();  // non-blocking
  ~UniqueStream();
  UniqueStream(UniqueStream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  UniqueStream& operator=(UniqueStream&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  cudaStream_t get() const { return s_; }
  explicit operator bool() const { return s_ != nullptr; }

 private:
  cudaStream_t s_ = nullptr;
};

class UniqueEvent {
 public:
  UniqueEvent() = default;
  static UniqueEvent create(bool timing = false);
  ~UniqueEvent();
  UniqueEvent(UniqueEvent&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  UniqueEvent& operator=(UniqueEvent&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Pinned host memory, grown on demand (the old contents are not kept).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get(size_t bytes);

 private:
  void* p_ = nullptr;
  size_t size_ = 0;
};

}  // namespace inferdesk::cuda
