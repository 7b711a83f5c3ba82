#include "cuda/backend/kv_cache.h"

namespace inferdesk::cuda {

void KvCache::init(CudaContext& ctx, const KvCacheShape& shape) {
  check_cuda(cudaStreamSynchronize(ctx.stream), "finishing the weight upload");
  data_.reset();
  shape_ = shape;
  layer_bytes_ = int64_t{shape.num_blocks} * shape.num_kv_heads * shape.block_size * shape.head_dim * elem_bytes(shape);
  data_ = ctx.memory.alloc(static_cast<size_t>(block_bytes(shape) * shape.num_blocks), MemKind::KvCache,
                           "the KV cache");
  ctx.graphs.invalidate();
}

KvFormat KvCache::format(int32_t layer) const {
  KvFormat f;
  if (shape_.dtype != KvCacheDtype::Fp8) return f;
  f.dtype = KvDtype::Fp8E4M3;
  const auto l = static_cast<size_t>(layer);
  if (l < shape_.k_scales.size()) f.k_scale = shape_.k_scales[l];
  if (l < shape_.v_scales.size()) f.v_scale = shape_.v_scales[l];
  return f;
}

}  // namespace inferdesk::cuda
