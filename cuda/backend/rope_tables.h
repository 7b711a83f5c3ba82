// Rope inverse-frequency tables on the device, uploaded once per distinct RopeConfig (keyed by the
// address and size of its host table, which lives as long as the model).
#pragma once

#include <map>
#include <utility>

#include "core/backend/backend.h"
#include "cuda/backend/context.h"

namespace inferdesk::cuda {

class RopeTables {
 public:
  explicit RopeTables(CudaContext& ctx) : ctx_(ctx) {}
  const float* get(const RopeConfig& rope);

 private:
  CudaContext& ctx_;
  std::map<std::pair<const void*, size_t>, DeviceBuffer> tables_;
};

}  // namespace inferdesk::cuda
