// Test helpers: write small safetensors files and folders in a temporary directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/util/error.h"

namespace inferdesk::test {

// The config.json of a one-layer llama small enough for hand-written tensors.
inline const char* kTinyConfig = R"({
  "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 16,
  "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
  "num_attention_heads": 2, "num_key_value_heads": 1, "torch_dtype": "float32"
})";

// 8-byte little-endian header length + header + data.
inline std::string safetensors_bytes(const std::string& header, const std::string& data,
                                     uint64_t header_len_override = UINT64_MAX) {
  uint64_t n = header_len_override == UINT64_MAX ? header.size() : header_len_override;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

struct TensorSpec {
  std::string name;
  std::string dtype;  // "F32", "BF16", ...
  std::vector<int64_t> shape;
  size_t elem_size;
};

// A consistent header + data for `specs`, laid out contiguously in order; data bytes count up.
inline std::string valid_safetensors(const std::vector<TensorSpec>& specs, const nlohmann::json& metadata = nullptr) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t pos = 0;
  for (const auto& s : specs) {
    uint64_t n = s.elem_size;
    for (auto d : s.shape) n *= static_cast<uint64_t>(d);
    h[s.name] = {{"dtype", s.dtype}, {"shape", s.shape}, {"data_offsets", {pos, pos + n}}};
    pos += n;
  }
  if (!metadata.is_null()) h["__metadata__"] = metadata;
  std::string data(pos, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i & 0xff);
  return safetensors_bytes(h.dump(), data);
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

// A fresh temporary directory, removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("inferdesk-io-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs `f`, expects an inferdesk::Error with `code` whose message contains every one of `parts`.
template <typename F>
void expect_error(F&& f, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an inferdesk::Error(" << to_string(code) << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << p << "\"";
    }
  }
}

}  // namespace inferdesk::test
