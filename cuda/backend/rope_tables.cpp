#include "cuda/backend/rope_tables.h"

namespace inferdesk::cuda {

const float* RopeTables::get(const RopeConfig& rope) {
  const std::pair<const void*, size_t> key{rope.inv_freq.data(), rope.inv_freq.size()};
  auto it = tables_.find(key);
  if (it != tables_.end()) return it->second.as<float>();
  ctx_.graphs.forbid_capture("rope table first used");
  DeviceBuffer b = ctx_.memory.alloc(rope.inv_freq.size() * 4, MemKind::Other, "rope table");
  // On the compute stream: a plain cudaMemcpy runs on the legacy default stream, which a
  // non-blocking stream does not wait for, and from pageable memory it may return early.
  check_cuda(cudaMemcpyAsync(b.get(), rope.inv_freq.data(), rope.inv_freq.size() * 4, cudaMemcpyHostToDevice,
                             ctx_.stream),
             "uploading the rope table");
  return tables_.emplace(key, std::move(b)).first->second.as<float>();
}

}  // namespace inferdesk::cuda
