// ModelFolder: a Hugging Face model folder on disk (config.json, optional generation_config.json,
// safetensors weights: one model.safetensors or shards listed by model.safetensors.index.json).
//
// The folder object owns the memory mappings of all shards; HostTensor pointers it hands out stay
// valid while it (or the object it is moved into) lives. Pickle checkpoints (pytorch_model*.bin,
// *.pt, *.pth) are refused: loading them can execute arbitrary code.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/io/safetensors.h"
#include "core/model/config.h"
#include "core/util/host_tensor.h"

namespace inferdesk {

// Size limits for the small JSON files of a model folder.
inline constexpr size_t kMaxConfigJsonBytes = 4u << 20;  // config.json, generation_config.json
inline constexpr size_t kMaxIndexJsonBytes = 64u << 20;  // model.safetensors.index.json
inline constexpr int kMaxConfigJsonDepth = 64;           // config.json nests 3 or 4 deep
// Most tensors an index may list (the whole model: every shard's kSafetensorsMaxTensors at most).
inline constexpr size_t kMaxIndexTensors = 1'000'000;

class ModelFolder {
 public:
  // Opens and validates everything. Throws Error:
  //   NotFound     the folder, config.json or any weights are missing
  //   Format       malformed config / index / safetensors, a duplicate key in any JSON file,
  //                index inconsistent with shards, shard paths escaping the folder, several
  //                .safetensors without an index, a FIFO or other non-regular file
  //   Unsupported  only pickle checkpoints present (or a pickle / zip / GGUF file named
  //                .safetensors), unsupported model_type or dtype
  static ModelFolder open(const std::filesystem::path& dir);

  ModelFolder(ModelFolder&&) noexcept = default;
  ModelFolder& operator=(ModelFolder&&) noexcept = default;
  ModelFolder(const ModelFolder&) = delete;
  ModelFolder& operator=(const ModelFolder&) = delete;

  const ModelConfig& config() const { return config_; }
  // Defaults when the folder has no generation_config.json.
  const GenerationConfig& generation_config() const { return generation_config_; }
  bool has_generation_config() const { return has_generation_config_; }

  // nullptr when absent.
  const HostTensor* find(std::string_view name) const;
  // Throws NotFound when absent, Format (naming tensor, expected and actual shape, and the file)
  // when the shape differs.
  const HostTensor& get(std::string_view name, const std::vector<int64_t>& expected_shape) const;
  // Sorted names of every tensor in the folder.
  std::vector<std::string> tensor_names() const;
  // Sum of nbytes over every tensor.
  int64_t weight_bytes() const;
  std::filesystem::path dir() const { return dir_; }
  // The shard file holding `name`; throws NotFound when absent.
  std::filesystem::path file_of(std::string_view name) const;
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  // Throws the shard's changed_on_disk_error() (Io) when a shard shrank on disk while mapped, so
  // that tensor data read since came back as zeros. Cheap when nothing happened: call after
  // each computation that read the weights.
  void check_unchanged() const;

 private:
  ModelFolder() = default;
  struct Location {
    uint32_t shard = 0;
    uint32_t index = 0;  // into shards_[shard].tensors()
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  const Location* locate(std::string_view name) const;
  void load_single(const std::filesystem::path& file);
  void load_indexed(const std::filesystem::path& index_file);
  void add_shard(SafetensorsFile file);

  std::filesystem::path dir_;
  ModelConfig config_;
  GenerationConfig generation_config_;
  bool has_generation_config_ = false;
  std::vector<SafetensorsFile> shards_;
  std::unordered_map<std::string, Location, StringHash, std::equal_to<>> by_name_;
};

// Formats a shape as "[a, b, c]" for messages.
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace inferdesk
