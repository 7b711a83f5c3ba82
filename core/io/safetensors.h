// SafetensorsFile: a .safetensors file mapped read-only and validated strictly.
//
// Layout: u64 little-endian header length N, N bytes of JSON header, then the data section.
// The header maps tensor names to {dtype, shape, data_offsets: [begin, end]} (offsets relative
// to the data section) plus an optional "__metadata__" object of string -> string.
// Every check failure is an Error (Format, or Unsupported for a dtype we cannot use) whose
// message names the file, the tensor and the reason. Tensor data pointers point into the
// mapping, may be unaligned, and stay valid while this object (or what it is moved into) lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/mapped_file.h"
#include "core/util/host_tensor.h"

namespace inferdesk {

// Largest header we accept (the format's reference implementation uses the same 100 MB bound).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;
inline constexpr size_t kSafetensorsMaxRank = 8;

// Parses and validates a header against a data section of `data_size` bytes starting at `data`.
// `source` names the file in messages. Returned tensors are sorted by data offset.
// Exposed separately from the file class so that fuzzers and tests can drive it from memory.
struct SafetensorsHeader {
  std::vector<HostTensor> tensors;
  std::map<std::string, std::string> metadata;
};
SafetensorsHeader parse_safetensors_header(std::string_view header_json, const std::byte* data, uint64_t data_size,
                                           const std::string& source);

class SafetensorsFile {
 public:
  // Maps and validates `path`. Throws Error (NotFound / Io / Format / Unsupported).
  static SafetensorsFile open(const std::filesystem::path& path);

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // Tensors in file order (sorted by data offset).
  const std::vector<HostTensor>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  // nullptr when absent. Linear in the number of tensors.
  const HostTensor* find(std::string_view name) const;
  const std::filesystem::path& path() const { return file_.path(); }
  size_t file_size() const { return file_.size(); }

 private:
  SafetensorsFile() = default;
  MappedFile file_;
  SafetensorsHeader header_;
};

}  // namespace inferdesk
