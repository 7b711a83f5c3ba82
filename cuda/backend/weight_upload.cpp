#include "cuda/backend/weight_upload.h"

#include <algorithm>
#include <cstring>

#include "core/util/error.h"
#include "cuda/kernels/elementwise.h"

namespace inferdesk::cuda {

namespace {
constexpr size_t kStagingChunk = 64u << 20;
}  // namespace

WeightUploader::WeightUploader(CudaContext& ctx) : ctx_(ctx) {
  for (auto& e : staging_done_) e = UniqueEvent::create();
}

void WeightUploader::upload(const HostTensor& host, void* dst, bool raw) {
  const size_t esize = dtype_size(host.dtype);
  if (!raw && host.dtype != DType::F32 && host.dtype != DType::BF16 && host.dtype != DType::F16)
    throw Error(ErrorCode::Unsupported, "tensor '" + host.name + "' has dtype " + dtype_name(host.dtype) +
                                            "; F32, F16, BF16 or F8_E4M3 expected");
  const int kind = raw || host.dtype == DType::BF16 ? 1 : host.dtype == DType::F32 ? 0 : 2;
  if (kind != 1 && !convert_scratch_.get())
    convert_scratch_ = ctx_.memory.alloc(2 * kStagingChunk, MemKind::Other, "weight conversion");
  const size_t total = host.nbytes;
  int slot = 0;
  for (size_t off = 0; off < total; off += kStagingChunk, slot ^= 1) {
    const size_t len = std::min(kStagingChunk, total - off);
    check_cuda(cudaEventSynchronize(staging_done_[slot].get()), "weight upload");
    void* pinned = staging_[slot].get(kStagingChunk);
    std::memcpy(pinned, host.data + off, len);
    if (kind == 1) {
      check_cuda(cudaMemcpyAsync(static_cast<char*>(dst) + off, pinned, len, cudaMemcpyHostToDevice, ctx_.stream),
                 "weight upload");
    } else {
      void* src = convert_scratch_.as<char>() + slot * kStagingChunk;
      check_cuda(cudaMemcpyAsync(src, pinned, len, cudaMemcpyHostToDevice, ctx_.stream), "weight upload");
      convert_to_bf16(src, kind, static_cast<bf16*>(dst) + off / esize, static_cast<int64_t>(len / esize), ctx_.launch);
    }
    check_cuda(cudaEventRecord(staging_done_[slot].get(), ctx_.stream), "weight upload");
  }
}

Buffer WeightUploader::load_rows(const std::vector<HostTensor>& parts, int64_t cols) {
  int64_t elems = 0;
  for (const HostTensor& p : parts) elems += p.numel();
  if (cols <= 0 || elems % cols != 0) throw Error(ErrorCode::Internal, "stacked weight parts do not form whole rows");
  // E4M3 weights stay E4M3 (their scales say what they mean): all parts or none.
  const bool fp8 = !parts.empty() && parts.front().dtype == DType::F8E4M3;
  for (const HostTensor& p : parts)
    if ((p.dtype == DType::F8E4M3) != fp8)
      throw Error(ErrorCode::Unsupported, "tensor '" + p.name + "' (" + dtype_name(p.dtype) +
                                              ") cannot be stacked with tensors of another precision");
  const size_t esize = fp8 ? 1 : 2;
  DeviceBuffer b = ctx_.memory.alloc(static_cast<size_t>(elems) * esize, MemKind::Weights, "weights");
  char* dst = b.as<char>();
  int64_t at = 0;
  for (const HostTensor& p : parts) {
    upload(p, dst + at * esize, fp8);
    at += p.numel();
  }
  return Buffer(Tensor{dst, fp8 ? DType::F8E4M3 : DType::BF16, elems / cols, cols, cols}, std::move(b).share());
}

Buffer WeightUploader::load_scales(const float* values, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) throw Error(ErrorCode::Internal, "load_scales: empty scale tensor");
  const auto bytes = static_cast<size_t>(rows * cols) * sizeof(float);
  DeviceBuffer b = ctx_.memory.alloc(bytes, MemKind::Weights, "quantization scales");
  // From pageable memory: the call returns once `values` has been read (the caller may free it).
  check_cuda(cudaMemcpyAsync(b.get(), values, bytes, cudaMemcpyHostToDevice, ctx_.stream), "scale upload");
  void* p = b.get();
  return Buffer(Tensor{p, DType::F32, rows, cols, cols}, std::move(b).share());
}

}  // namespace inferdesk::cuda
