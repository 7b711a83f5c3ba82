// SafetensorsFile: a .safetensors file mapped read-only and validated strictly.
//
// Layout: u64 little-endian header length N, N bytes of JSON header, then the data section.
// The header maps tensor names to {dtype, shape, data_offsets: [begin, end]} (offsets relative
// to the data section) plus an optional "__metadata__" object of string -> string.
// Every check failure is an Error (Format, or Unsupported for a dtype we cannot use and for a
// pickle, zip or GGUF file under a .safetensors name) whose message names the file, the tensor
// and the reason. Tensor data pointers point into the
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
// Most tensors one file may list. Real shards hold a few hundred to a few thousand, whole models
// under 150k (the largest MoE checkpoints); the limit bounds what a hostile header costs to parse
// (300k entries: about 0.3 GB and 1 s; 1M would take 0.9 GB).
inline constexpr size_t kSafetensorsMaxTensors = 300'000;

// How to turn a PyTorch checkpoint into safetensors, for messages refusing one.
inline constexpr const char* kConvertToSafetensorsHint =
    "Convert the model to safetensors, e.g. in Python with transformers: "
    "AutoModelForCausalLM.from_pretrained(dir).save_pretrained(out_dir, safe_serialization=True)";

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
  // True once the file shrank on disk under its mapping (MappedFile::invalidated): tensor data
  // read since may be zeros.
  bool invalidated() const noexcept { return file_.invalidated(); }
  Error changed_on_disk_error() const { return file_.changed_on_disk_error(); }

 private:
  SafetensorsFile() = default;
  MappedFile file_;
  SafetensorsHeader header_;
};

}  // namespace inferdesk
