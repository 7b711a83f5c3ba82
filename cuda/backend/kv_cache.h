// The paged KV cache on the GPU: BF16 [layer][K|V][block][kv_head][slot][head_dim], one
// allocation (K and V of layer l follow each other).
#pragma once

#include "core/backend/backend.h"
#include "cuda/backend/context.h"
#include "cuda/kernels/common.h"

namespace inferdesk::cuda {

class KvCache {
 public:
  static int64_t block_bytes(const KvCacheShape& s) {
    return int64_t{s.num_layers} * 2 * s.num_kv_heads * s.block_size * s.head_dim * 2;
  }
  // Replaces the cache (after the weight upload finishes); the graphs pointing at the old go.
  void init(CudaContext& ctx, const KvCacheShape& shape);
  const KvCacheShape& shape() const { return shape_; }
  bf16* k(int32_t layer) const { return data_.as<bf16>() + (int64_t{layer} * 2) * layer_elems_; }
  bf16* v(int32_t layer) const { return k(layer) + layer_elems_; }

 private:
  KvCacheShape shape_{};
  DeviceBuffer data_;
  int64_t layer_elems_ = 0;  // elements of K (or V) of one layer
};

}  // namespace inferdesk::cuda
