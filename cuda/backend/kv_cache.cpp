#include "cuda/backend/kv_cache.h"

namespace inferdesk::cuda {

void KvCache::init(CudaContext& ctx, const KvCacheShape& shape) {
  check_cuda(cudaStreamSynchronize(ctx.stream), "finishing the weight upload");
  data_.reset();
  shape_ = shape;
  layer_elems_ = int64_t{shape.num_blocks} * shape.num_kv_heads * shape.block_size * shape.head_dim;
  data_ = ctx.memory.alloc(static_cast<size_t>(block_bytes(shape) * shape.num_blocks), MemKind::KvCache,
                           "the KV cache");
  ctx.graphs.invalidate();
}

}  // namespace inferdesk::cuda
