// Device memory of the CUDA backend: every allocation goes through DeviceMemory, which names what
// failed when the GPU is full and keeps the byte counts Backend::memory_info reports.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace inferdesk::cuda {

// What an allocation counts as in memory_info (Other: workspaces that are not reported).
enum class MemKind { Weights, Activations, KvCache, Other };

class DeviceMemory;

// One device allocation; freed (and uncounted) when destroyed.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }
  void reset();
  // Ownership handed to a shared_ptr (Backend::Buffer's owner); this handle becomes empty.
  std::shared_ptr<void> share() &&;

 private:
  friend class DeviceMemory;
  void* p_ = nullptr;
  size_t bytes_ = 0;
  int64_t* counter_ = nullptr;  // DeviceMemory's count for the buffer's kind, or null
};

class DeviceMemory {
 public:
  // Throws Error(OutOfMemory) naming `what` and the free memory when the GPU is full.
  DeviceBuffer alloc(size_t bytes, MemKind kind, const char* what);
  // Replaces `b` (after `stream` drains, when it held memory) by `alloc_bytes` of new memory when
  // it holds less than `need`. Returns true when it moved.
  bool grow(DeviceBuffer& b, size_t need, size_t alloc_bytes, MemKind kind, const char* what, cudaStream_t stream);
  int64_t bytes(MemKind kind) const { return counts_[static_cast<int>(kind)]; }
  // Moves `bytes` of accounting from one kind to another (random fills make dummy weights).
  void recount(int64_t bytes, MemKind from, MemKind to);

 private:
  int64_t counts_[4] = {0, 0, 0, 0};
};

}  // namespace inferdesk::cuda
