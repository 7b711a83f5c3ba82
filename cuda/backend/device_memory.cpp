#include "cuda/backend/device_memory.h"

#include <algorithm>
#include <string>

#include "core/util/error.h"

namespace inferdesk::cuda {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    counter_ = std::exchange(o.counter_, nullptr);
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (!p_) return;
  cudaFree(p_);
  if (counter_) *counter_ -= static_cast<int64_t>(bytes_);
  p_ = nullptr;
  bytes_ = 0;
  counter_ = nullptr;
}

std::shared_ptr<void> DeviceBuffer::share() && {
  auto* holder = new DeviceBuffer(std::move(*this));
  return std::shared_ptr<void>(holder->get(), [holder](void*) { delete holder; });
}

DeviceBuffer DeviceMemory::alloc(size_t bytes, MemKind kind, const char* what) {
  DeviceBuffer b;
  const cudaError_t e = cudaMalloc(&b.p_, std::max<size_t>(bytes, 16));
  if (e != cudaSuccess) {
    cudaGetLastError();
    b.p_ = nullptr;
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw Error(ErrorCode::OutOfMemory, std::string("out of GPU memory allocating ") + std::to_string(bytes >> 20) +
                                            " MiB for " + what + " (" + std::to_string(free_b >> 20) + " MiB free of " +
                                            std::to_string(total_b >> 20) +
                                            " MiB): use a smaller model, a shorter context or a lower memory fraction");
  }
  b.bytes_ = bytes;
  if (kind != MemKind::Other) {
    b.counter_ = &counts_[static_cast<int>(kind)];
    *b.counter_ += static_cast<int64_t>(bytes);
  }
  return b;
}

bool DeviceMemory::grow(DeviceBuffer& b, size_t need, size_t alloc_bytes, MemKind kind, const char* what,
                        cudaStream_t stream) {
  if (need <= b.bytes()) return false;
  if (b.get()) {
    cudaStreamSynchronize(stream);  // nothing queued may still use the old memory
    b.reset();
  }
  b = alloc(alloc_bytes, kind, what);
  return true;
}

void DeviceMemory::recount(int64_t bytes, MemKind from, MemKind to) {
  counts_[static_cast<int>(from)] -= bytes;
  counts_[static_cast<int>(to)] += bytes;
}

}  // namespace inferdesk::cuda
