// FP8 checkpoints with bad scales or configs: typed errors that name the tensor or field. Each
// case copies a real FP8 fixture (tests/golden/models-fp8) and breaks one thing.
#include <cmath>
#include <cstring>
#include <map>

#include "core/backend/backend.h"
#include "core/engine/model_loader.h"
#include "core/io/safetensors.h"
#include "core/util/dtype.h"
#include "tests/unit/io/st_writer.h"

namespace inferdesk::test {
namespace {

struct Entry {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
using Tensors = std::map<std::string, Entry>;

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(INFERDESK_TEST_SOURCE_DIR) / "tests/golden/models-fp8" / name;
}

Tensors read_tensors(const std::filesystem::path& file) {
  Tensors out;
  const SafetensorsFile f = SafetensorsFile::open(file);
  for (const HostTensor& t : f.tensors())
    out[t.name] = {dtype_name(t.dtype), t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)};
  return out;
}

void write_tensors(const std::filesystem::path& file, const Tensors& ts) {
  nlohmann::json h = nlohmann::json::object();
  std::string data;
  for (const auto& [name, e] : ts) {
    h[name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
    data += e.bytes;
  }
  write_file(file, safetensors_bytes(h.dump(), data));
}

class Fp8FolderTest : public ::testing::Test {
 protected:
  // A copy of fixture `name` with `edit` applied to its tensors and `config` to its config.json.
  std::filesystem::path broken(const std::string& name, const std::function<void(Tensors&)>& edit,
                               const std::function<void(nlohmann::json&)>& config = {}) {
    const auto src = fixture(name);
    const auto dst = dir_.path() / (name + std::to_string(n_++));
    std::filesystem::create_directories(dst);
    Tensors ts = read_tensors(src / "model.safetensors");
    edit(ts);
    write_tensors(dst / "model.safetensors", ts);
    nlohmann::json cfg = nlohmann::json::parse(std::ifstream(src / "config.json"));
    if (config) config(cfg);
    write_file(dst / "config.json", cfg.dump());
    return dst;
  }
  void expect_error(const std::filesystem::path& dir, ErrorCode code, const std::vector<std::string>& parts) {
    try {
      load_model_folder(dir, make_cpu_backend(1));
      ADD_FAILURE() << "loaded " << dir;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
  TempDir dir_;
  int n_ = 0;
};

const std::string kScale = "model.layers.0.self_attn.q_proj.weight_scale";
const std::string kBlockScale = "model.layers.0.mlp.gate_proj.weight_scale_inv";

TEST_F(Fp8FolderTest, TheFixturesLoad) {
  EXPECT_NE(load_model_folder(fixture("qwen3-channel"), make_cpu_backend(1)).quantization, "none");
  EXPECT_NE(load_model_folder(fixture("llama-block"), make_cpu_backend(1)).quantization, "none");
}

TEST_F(Fp8FolderTest, ScaleOfTheWrongShape) {
  expect_error(broken("qwen3-channel",
                      [](Tensors& t) {
                        Entry& e = t[kScale];
                        e.shape = {e.shape[0] / 2, 2};
                      }),
               ErrorCode::Format, {kScale, "per-channel scales"});
  expect_error(broken("llama-block",
                      [](Tensors& t) {
                        Entry& e = t[kBlockScale];
                        e.shape = {1, 2};  // a [256, 128] weight has 2 x 1 blocks of 128 x 128
                      }),
               ErrorCode::Format, {kBlockScale, "block scales"});
}

TEST_F(Fp8FolderTest, ScaleOfTheWrongDtype) {
  expect_error(broken("qwen3-channel",
                      [](Tensors& t) {
                        Entry& e = t[kScale];  // BF16 [N, 1]: the same bytes as I32 [N / 2, 1]
                        e.dtype = "I32";
                        e.shape = {e.shape[0] / 2, 1};
                      }),
               ErrorCode::Format, {kScale, "F32, BF16 or F16"});
}

TEST_F(Fp8FolderTest, NonFiniteOrNegativeScales) {
  for (float bad : {std::nanf(""), INFINITY, -1.0f}) {
    expect_error(broken("llama-block",
                        [bad](Tensors& t) {
                          Entry& e = t[kBlockScale];  // F32
                          std::memcpy(e.bytes.data(), &bad, 4);
                        }),
                 ErrorCode::Format, {kBlockScale, "finite"});
  }
}

TEST_F(Fp8FolderTest, Fp8WeightWithoutItsScale) {
  expect_error(broken("qwen3-channel", [](Tensors& t) { t.erase(kScale); }), ErrorCode::Format,
               {"model.layers.0.self_attn.q_proj.weight", "no scale tensor", kScale});
}

TEST_F(Fp8FolderTest, UnknownOrMalformedQuantizationConfig) {
  auto keep = [](Tensors&) {};
  expect_error(broken("qwen3-channel", keep,
                      [](nlohmann::json& c) { c["quantization_config"]["quant_method"] = "bitsandbytes"; }),
               ErrorCode::Unsupported, {"bitsandbytes"});
  expect_error(broken("llama-block", keep,
                      [](nlohmann::json& c) {
                        c["quantization_config"]["weight_block_size"] = {0, 128};
                      }),
               ErrorCode::Format, {"weight_block_size"});
  expect_error(broken("qwen3-channel", keep,
                      [](nlohmann::json& c) {
                        c["quantization_config"]["config_groups"]["group_0"]["weights"]["strategy"] = "group";
                      }),
               ErrorCode::Unsupported, {"strategy", "group"});
  // FP8 tensors in a folder whose config says nothing about them.
  expect_error(broken("qwen3-channel", keep, [](nlohmann::json& c) { c.erase("quantization_config"); }),
               ErrorCode::Format, {"F8_E4M3", "quantization_config"});
}

TEST_F(Fp8FolderTest, QuantizingAQuantizedFolderIsRefused) {
  LoadOptions lo;
  lo.quantization = LoadQuantization::Fp8;
  try {
    load_model_folder(fixture("qwen3-channel"), make_cpu_backend(1), {}, lo);
    ADD_FAILURE() << "quantized twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("already quantized"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace inferdesk::test
