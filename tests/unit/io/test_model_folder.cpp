#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/io/model_folder.h"
#include "core/util/error.h"
#include "tests/unit/io/st_writer.h"

namespace inferdesk {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::TempDir;
using test::valid_safetensors;
using test::write_file;

using test::kTinyConfig;

class ModelFolderTest : public ::testing::Test {
 protected:
  fs::path dir() const { return tmp_.path() / "model"; }
  void SetUp() override {
    fs::create_directories(dir());
    write_file(dir() / "config.json", kTinyConfig);
  }
  // Two shards: a.safetensors holds "embed" [16, 8] F32, b.safetensors holds "norm" [8] F32.
  void write_two_shards() {
    write_file(dir() / "a.safetensors", valid_safetensors({{"embed", "F32", {16, 8}, 4}}));
    write_file(dir() / "b.safetensors", valid_safetensors({{"norm", "F32", {8}, 4}}));
  }
  void write_index(const nlohmann::json& weight_map) {
    nlohmann::json j = {{"metadata", {{"total_size", 544}}}, {"weight_map", weight_map}};
    write_file(dir() / "model.safetensors.index.json", j.dump());
  }
  TempDir tmp_;
};

TEST_F(ModelFolderTest, SingleFileFolder) {
  write_file(dir() / "model.safetensors", valid_safetensors({{"embed", "F32", {16, 8}, 4}, {"norm", "BF16", {8}, 2}}));
  ModelFolder m = ModelFolder::open(dir());
  EXPECT_EQ(m.config().model_type, "llama");
  EXPECT_FALSE(m.has_generation_config());
  EXPECT_EQ(m.tensor_names(), (std::vector<std::string>{"embed", "norm"}));
  EXPECT_EQ(m.weight_bytes(), 16 * 8 * 4 + 8 * 2);
  EXPECT_EQ(m.get("embed", {16, 8}).dtype, DType::F32);
  EXPECT_EQ(m.find("norm")->dtype, DType::BF16);
  EXPECT_EQ(m.find("missing"), nullptr);
  EXPECT_EQ(m.file_of("norm"), dir() / "model.safetensors");
  EXPECT_EQ(m.dir(), dir());
}

TEST_F(ModelFolderTest, GetChecksShapeAndPresence) {
  write_file(dir() / "model.safetensors", valid_safetensors({{"embed", "F32", {16, 8}, 4}}));
  ModelFolder m = ModelFolder::open(dir());
  expect_error(
      [&] {
        m.get("embed", {8, 16});
      },
      ErrorCode::Format, {"\"embed\"", "[16, 8]", "expected [8, 16]", "model.safetensors"});
  expect_error([&] { m.get("lm_head", {16, 8}); }, ErrorCode::NotFound, {"\"lm_head\""});
  expect_error([&] { m.file_of("lm_head"); }, ErrorCode::NotFound, {"\"lm_head\""});
}

TEST_F(ModelFolderTest, MovedFolderKeepsTensorPointers) {
  write_file(dir() / "model.safetensors", valid_safetensors({{"embed", "F32", {16, 8}, 4}}));
  ModelFolder a = ModelFolder::open(dir());
  const HostTensor* t = a.find("embed");
  ModelFolder b = std::move(a);
  EXPECT_EQ(b.find("embed"), t);
  EXPECT_EQ(static_cast<uint8_t>(b.find("embed")->data[5]), 5u);
}

TEST_F(ModelFolderTest, ShardedFolderWithIndex) {
  write_two_shards();
  write_index({{"embed", "a.safetensors"}, {"norm", "b.safetensors"}});
  write_file(dir() / "generation_config.json", R"({"eos_token_id": [2, 7], "temperature": 0.6})");
  ModelFolder m = ModelFolder::open(dir());
  EXPECT_EQ(m.shards().size(), 2u);
  EXPECT_EQ(m.file_of("embed"), dir() / "a.safetensors");
  EXPECT_EQ(m.file_of("norm"), dir() / "b.safetensors");
  EXPECT_TRUE(m.has_generation_config());
  EXPECT_EQ(m.generation_config().eos_token_ids, (std::vector<int64_t>{2, 7}));
  EXPECT_DOUBLE_EQ(m.generation_config().temperature, 0.6);
}

TEST_F(ModelFolderTest, IndexShardPathEscapesRejected) {
  write_two_shards();
  write_file(tmp_.path() / "x.safetensors", valid_safetensors({{"norm", "F32", {8}, 4}}));
  write_index({{"embed", "a.safetensors"}, {"norm", "../x.safetensors"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format,
               {"model.safetensors.index.json", "../x.safetensors", "plain file name"});
  write_index({{"embed", "a.safetensors"}, {"norm", "/etc/passwd"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"/etc/passwd"});
  write_index({{"embed", "a.safetensors"}, {"norm", "sub/b.safetensors"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"sub/b.safetensors"});
  write_index({{"embed", "a.safetensors"}, {"norm", "config.json"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {".safetensors"});
}

TEST_F(ModelFolderTest, SymlinkOutsideFolderRejected) {
  write_two_shards();
  write_file(tmp_.path() / "outside.safetensors", valid_safetensors({{"norm", "F32", {8}, 4}}));
  fs::create_symlink(tmp_.path() / "outside.safetensors", dir() / "c.safetensors");
  write_index({{"embed", "a.safetensors"}, {"norm", "c.safetensors"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"c.safetensors", "outside the model folder"});
  // A symlink that stays inside the folder is fine.
  fs::remove(dir() / "c.safetensors");
  fs::create_symlink("b.safetensors", dir() / "c.safetensors");
  EXPECT_EQ(ModelFolder::open(dir()).file_of("norm"), dir() / "c.safetensors");
}

TEST_F(ModelFolderTest, HuggingFaceCacheSnapshotSymlinksAccepted) {
  // <repo>/snapshots/<rev>/model.safetensors -> ../../blobs/<hash>
  fs::path repo = tmp_.path() / "models--org--tiny";
  fs::path snap = repo / "snapshots" / "abc123";
  fs::create_directories(snap);
  fs::create_directories(repo / "blobs");
  write_file(repo / "blobs" / "cfg", kTinyConfig);
  write_file(repo / "blobs" / "w", valid_safetensors({{"embed", "F32", {16, 8}, 4}}));
  fs::create_symlink("../../blobs/cfg", snap / "config.json");
  fs::create_symlink("../../blobs/w", snap / "model.safetensors");
  ModelFolder m = ModelFolder::open(snap);
  EXPECT_NE(m.find("embed"), nullptr);
}

TEST_F(ModelFolderTest, IndexNamesTensorMissingFromShard) {
  write_two_shards();
  write_index({{"embed", "a.safetensors"}, {"norm", "b.safetensors"}, {"extra", "b.safetensors"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"\"extra\"", "b.safetensors", "no such tensor"});
}

TEST_F(ModelFolderTest, ShardTensorMissingFromIndex) {
  write_two_shards();
  write_file(dir() / "b.safetensors", valid_safetensors({{"norm", "F32", {8}, 4}, {"stray", "F32", {2}, 4}}));
  write_index({{"embed", "a.safetensors"}, {"norm", "b.safetensors"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format,
               {"b.safetensors", "\"stray\"", "does not list it"});
  // Listed, but under the other shard.
  write_index({{"embed", "a.safetensors"}, {"norm", "b.safetensors"}, {"stray", "a.safetensors"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"\"stray\""});
  // A file in the folder that the index does not mention at all is simply not used.
  write_index({{"embed", "a.safetensors"}});
  EXPECT_EQ(ModelFolder::open(dir()).tensor_names(), (std::vector<std::string>{"embed"}));
}

TEST_F(ModelFolderTest, IndexShardFileMissing) {
  write_two_shards();
  write_index({{"embed", "a.safetensors"}, {"norm", "zzz.safetensors"}});
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::NotFound, {"zzz.safetensors"});
}

TEST_F(ModelFolderTest, MalformedIndex) {
  write_two_shards();
  write_file(dir() / "model.safetensors.index.json", R"({"metadata": {}})");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"weight_map"});
  write_file(dir() / "model.safetensors.index.json",
             R"({"weight_map": {"embed": "a.safetensors", "embed": "b.safetensors"}})");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"duplicate key \"embed\""});
  write_file(dir() / "model.safetensors.index.json", R"({"weight_map": {"embed": 3}})");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"\"embed\""});
}

TEST_F(ModelFolderTest, SeveralSafetensorsWithoutIndex) {
  write_two_shards();
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format,
               {"2 .safetensors files", "model.safetensors.index.json"});
}

TEST_F(ModelFolderTest, OneOtherSafetensorsFileIsUsed) {
  write_file(dir() / "consolidated.safetensors", valid_safetensors({{"embed", "F32", {2}, 4}}));
  EXPECT_NE(ModelFolder::open(dir()).find("embed"), nullptr);
}

TEST_F(ModelFolderTest, PickleOnlyFolderRefused) {
  write_file(dir() / "pytorch_model.bin", "PK\x03\x04 not really a zip");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Unsupported,
               {"pytorch_model.bin", "pickle", "safe_serialization=True"});
}

TEST_F(ModelFolderTest, NoWeightsAtAll) {
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::NotFound, {"no weights"});
}

TEST_F(ModelFolderTest, MissingFolderOrConfig) {
  expect_error([&] { ModelFolder::open(tmp_.path() / "nope"); }, ErrorCode::NotFound, {"nope"});
  fs::remove(dir() / "config.json");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::NotFound, {(dir() / "config.json").string()});
}

TEST_F(ModelFolderTest, BadConfigNamesFileAndField) {
  write_file(dir() / "model.safetensors", valid_safetensors({{"embed", "F32", {2}, 4}}));
  const std::string cfg = (dir() / "config.json").string();
  write_file(dir() / "config.json", "{ not json");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {cfg, "invalid JSON"});
  write_file(dir() / "config.json", R"({"model_type": "llama", "vocab_size": 16,
    "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 0,
    "num_attention_heads": 2})");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {cfg, "num_hidden_layers"});
  write_file(dir() / "config.json", R"({"model_type": "gpt2"})");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Unsupported, {cfg, "gpt2", "qwen3"});
  write_file(dir() / "config.json", kTinyConfig);
  write_file(dir() / "generation_config.json", R"({"temperature": "hot"})");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"generation_config.json", "temperature"});
}

// The random-weight hub-layout checkpoints under tests/golden/models (built with transformers).
TEST(ModelFolderGolden, OpensEveryFixture) {
  const fs::path root = fs::path(INFERDESK_SOURCE_DIR) / "tests/golden/models";
  if (!fs::exists(root)) GTEST_SKIP() << "no golden fixtures at " << root;
  int opened = 0;
  for (const char* name : {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "tiny-chat"}) {
    SCOPED_TRACE(name);
    ModelFolder m = ModelFolder::open(root / name);
    const ModelConfig& c = m.config();
    const HostTensor& embed = m.get("model.embed_tokens.weight", {c.vocab_size, c.hidden_size});
    EXPECT_GT(embed.nbytes, 0u);
    int64_t total = 0;
    for (const auto& n : m.tensor_names()) total += static_cast<int64_t>(m.find(n)->nbytes);
    EXPECT_EQ(total, m.weight_bytes());
    m.get("model.layers.0.self_attn.q_proj.weight", {c.num_attention_heads * c.head_dim, c.hidden_size});
    m.get("model.layers.0.self_attn.k_proj.weight", {c.num_key_value_heads * c.head_dim, c.hidden_size});
    EXPECT_EQ(m.find("model.layers.0.self_attn.q_proj.bias") != nullptr, c.attention_bias);
    ++opened;
  }
  EXPECT_EQ(opened, 8);
  ModelFolder mistral = ModelFolder::open(root / "mistral");
  EXPECT_EQ(mistral.shards().size(), 2u);
  ModelFolder mixtral = ModelFolder::open(root / "mixtral");
  EXPECT_NE(mixtral.find("model.layers.1.block_sparse_moe.experts.3.w2.weight"), nullptr);
}

}  // namespace
}  // namespace inferdesk
