#include "cuda/backend/context.h"

#include <string>

#include "core/util/error.h"
#include "cuda/cuda_backend.h"

namespace inferdesk::cuda {

namespace {

// Selects the device first: the stream and everything after belong to it.
int select_device(int device) {
  std::string why;
  if (!cuda_backend_available(&why)) throw Error(ErrorCode::Unsupported, why);
  check_cuda(cudaSetDevice(device), "selecting the GPU");
  return device;
}

}  // namespace

CudaContext::CudaContext(const CudaBackendOptions& o)
    : device(select_device(o.device)),
      compute(UniqueStream::create()),
      stream(compute.get()),
      launch{compute.get(), o.pdl},
      graphs(compute.get(), o.cuda_graphs, o.graph_batch_sizes) {
  check_cuda(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), "querying the GPU");
}

Mat as_mat(const Tensor& t) {
  Mat m;
  m.data = t.data;
  m.rows = t.rows;
  m.cols = t.cols;
  m.stride = t.stride;
  if (t.dtype == DType::F32)
    m.dt = Dt::F32;
  else if (t.dtype == DType::BF16)
    m.dt = Dt::BF16;
  else
    throw Error(ErrorCode::Internal,
                std::string("CUDA op on a tensor of dtype ") + dtype_name(t.dtype) + " (F32 or BF16 expected)");
  return m;
}

const bf16* bf16_ptr(const Tensor& t, const char* what) {
  if (t.dtype != DType::BF16) throw Error(ErrorCode::Internal, std::string(what) + " must be BF16 on the CUDA backend");
  return static_cast<const bf16*>(t.data);
}

void CudaContext::synchronize() const { check_cuda(cudaStreamSynchronize(stream), "GPU step"); }

}  // namespace inferdesk::cuda
