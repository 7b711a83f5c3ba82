#include "cuda/backend/cuda_handles.h"

#include <string>

#include "core/util/error.h"

namespace inferdesk::cuda {

void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear the error state where it is not sticky
  const ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::Internal;
  throw Error(code, std::string(what) + ": " + cudaGetErrorString(e));
}

UniqueStream UniqueStream::create() {
  UniqueStream s;
  check_cuda(cudaStreamCreateWithFlags(&s.s_, cudaStreamNonBlocking), "creating a stream");
  return s;
}

UniqueStream::~UniqueStream() {
  if (s_) {
    cudaStreamSynchronize(s_);
    cudaStreamDestroy(s_);
  }
}

UniqueEvent UniqueEvent::create(bool timing) {
  UniqueEvent e;
  check_cuda(timing ? cudaEventCreate(&e.e_) : cudaEventCreateWithFlags(&e.e_, cudaEventDisableTiming),
             "creating an event");
  return e;
}

UniqueEvent::~UniqueEvent() {
  if (e_) cudaEventDestroy(e_);
}

PinnedBuffer::~PinnedBuffer() {
  if (p_) cudaFreeHost(p_);
}

void* PinnedBuffer::get(size_t bytes) {
  if (bytes <= size_) return p_;
  if (p_) cudaFreeHost(p_);
  p_ = nullptr;
  size_ = 0;
  check_cuda(cudaHostAlloc(&p_, bytes, cudaHostAllocDefault), "pinned host memory");
  size_ = bytes;
  return p_;
}

}  // namespace inferdesk::cuda
