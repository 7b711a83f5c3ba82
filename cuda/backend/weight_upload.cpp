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

void WeightUploader::upload(const HostTensor& host, bf16* dst) {
  const size_t esize = dtype_size(host.dtype);
  if (host.dtype != DType::F32 && host.dtype != DType::BF16 && host.dtype != DType::F16)
    throw Error(ErrorCode::Unsupported,
                "tensor '" + host.name + "' has dtype " + dtype_name(host.dtype) + "; F32, F16 or BF16 expected");
  const int kind = host.dtype == DType::F32 ? 0 : host.dtype == DType::BF16 ? 1 : 2;
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
      check_cuda(cudaMemcpyAsync(reinterpret_cast<char*>(dst) + off, pinned, len, cudaMemcpyHostToDevice, ctx_.stream),
                 "weight upload");
    } else {
      void* raw = convert_scratch_.as<char>() + slot * kStagingChunk;
      check_cuda(cudaMemcpyAsync(raw, pinned, len, cudaMemcpyHostToDevice, ctx_.stream), "weight upload");
      convert_to_bf16(raw, kind, dst + off / esize, static_cast<int64_t>(len / esize), ctx_.launch);
    }
    check_cuda(cudaEventRecord(staging_done_[slot].get(), ctx_.stream), "weight upload");
  }
}

Buffer WeightUploader::load_rows(const std::vector<HostTensor>& parts, int64_t cols) {
  int64_t elems = 0;
  for (const HostTensor& p : parts) elems += p.numel();
  if (cols <= 0 || elems % cols != 0) throw Error(ErrorCode::Internal, "stacked weight parts do not form whole rows");
  DeviceBuffer b = ctx_.memory.alloc(static_cast<size_t>(elems) * 2, MemKind::Weights, "weights");
  auto* dst = b.as<bf16>();
  int64_t at = 0;
  for (const HostTensor& p : parts) {
    upload(p, dst + at);
    at += p.numel();
  }
  return Buffer(Tensor{dst, DType::BF16, elems / cols, cols, cols}, std::move(b).share());
}

}  // namespace inferdesk::cuda
