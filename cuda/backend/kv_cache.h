// The paged KV cache on the GPU: [layer][K|V][block][kv_head][slot][head_dim], one allocation (K
// and V of layer l follow each other), of BF16 or, for KvCacheDtype::Fp8, of E4M3 bytes with the
// per-layer K and V scales of the shape (kernels/kv_format.h): half the bytes per block, so twice
// the blocks for the same memory.
#pragma once

#include <vector>

#include "core/backend/backend.h"
#include "cuda/backend/context.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/kv_format.h"

namespace inferdesk::cuda {

class KvCache {
 public:
  static int64_t elem_bytes(const KvCacheShape& s) { return s.dtype == KvCacheDtype::Fp8 ? 1 : 2; }
  static int64_t block_bytes(const KvCacheShape& s) {
    return int64_t{s.num_layers} * 2 * s.num_kv_heads * s.block_size * s.head_dim * elem_bytes(s);
  }
  // Replaces the cache (after the weight upload finishes); the graphs pointing at the old go. The
  // shape's dtype and scales were checked by the caller.
  void init(CudaContext& ctx, const KvCacheShape& shape);
  const KvCacheShape& shape() const { return shape_; }
  void* k(int32_t layer) const { return data_.as<char>() + int64_t{layer} * 2 * layer_bytes_; }
  void* v(int32_t layer) const { return static_cast<char*>(k(layer)) + layer_bytes_; }
  // How layer `layer`'s K and V are stored (its scales, 1.0 where the shape has none).
  KvFormat format(int32_t layer) const;

 private:
  KvCacheShape shape_{};
  DeviceBuffer data_;
  int64_t layer_bytes_ = 0;  // bytes of K (or V) of one layer
};

}  // namespace inferdesk::cuda
