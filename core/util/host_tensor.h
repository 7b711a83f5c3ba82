// A read-only view of a tensor in host memory (typically an mmapped safetensors file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/util/dtype.h"

namespace inferdesk {

struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// Element i of an F32, F16 or BF16 tensor as float (0 for other dtypes; callers check the dtype).
inline float float_at(const HostTensor& t, int64_t i) {
  if (t.dtype == DType::F32) {
    float f;
    std::memcpy(&f, t.data + i * 4, 4);
    return f;
  }
  if (t.dtype != DType::BF16 && t.dtype != DType::F16) return 0.0f;
  uint16_t h;
  std::memcpy(&h, t.data + i * 2, 2);
  return t.dtype == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

}  // namespace inferdesk
