// Writing one safetensors file: the 8-byte header length, the JSON header (8-byte aligned data
// start, "__metadata__": {"format": "pt"}) and each tensor's bytes in the order given, produced one
// at a time so a whole model never has to sit in memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace inferdesk {

struct SafetensorsOut {
  std::string name;
  std::string dtype;  // as safetensors names it: "F32", "BF16", "I32", ...
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  std::function<std::vector<uint8_t>()> produce;  // exactly `bytes` bytes
};

// `after_each` (may be empty) runs after each tensor is written with the bytes written so far;
// returning false stops the write (Error Cancelled; the caller removes the file). Throws Error Io
// on a write failure, Internal when a tensor produces the wrong number of bytes.
void write_safetensors(const std::filesystem::path& file, const std::vector<SafetensorsOut>& tensors,
                       const std::function<bool(int64_t)>& after_each = {});

// The bytes of F32 values stored as `dtype` (F32, F16 or BF16).
std::vector<uint8_t> float_bytes(const std::vector<float>& v, const std::string& dtype);

}  // namespace inferdesk
