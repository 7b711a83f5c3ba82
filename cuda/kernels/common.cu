#include "cuda/kernels/common.cuh"

namespace inferdesk::cuda {

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorCode::Internal, std::string(what) + ": CUDA launch failed: " + cudaGetErrorString(e));
}

void unsupported_config(const std::string& what) {
  throw Error(ErrorCode::Internal, "CUDA kernel configuration not implemented: " + what);
}

}  // namespace inferdesk::cuda
