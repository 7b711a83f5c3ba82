// Model facts before loading: parameter counts from the config must equal the tensors actually in
// the checkpoint; memory estimates follow the cache geometry.
#include <gtest/gtest.h>

#include "core/engine/model_info.h"
#include "core/engine/model_loader.h"
#include "core/io/model_folder.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

class ModelInfoGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelInfoGolden, ParameterCountEqualsTheTensorsInTheFiles) {
  const auto dir = test::golden_models_dir() / GetParam();
  const ModelInfo info = inspect_model_folder(dir);
  const ModelFolder folder = ModelFolder::open(dir);
  int64_t numel = 0;
  for (const auto& shard : folder.shards())
    for (const auto& t : shard.tensors()) numel += t.numel();
  EXPECT_EQ(info.params_total, numel);
  EXPECT_EQ(info.weight_bytes, folder.weight_bytes());
  EXPECT_GE(info.size_on_disk, info.weight_bytes);
  if (info.config.is_moe())
    EXPECT_LT(info.params_active, info.params_total);
  else
    EXPECT_EQ(info.params_active, info.params_total);
  EXPECT_FALSE(info.has_tokenizer);
}

INSTANTIATE_TEST_SUITE_P(All, ModelInfoGolden, ::testing::ValuesIn(test::golden_model_names()),
                         [](const auto& info) { return info.param; });

TEST(ModelInfo, DtypeAndTokenizerOfTinyChat) {
  const ModelInfo info = inspect_model_folder(test::golden_models_dir() / "tiny-chat");
  EXPECT_EQ(info.dtype, "BF16");
  EXPECT_TRUE(info.has_tokenizer);
  EXPECT_EQ(info.num_shards, 1);
}

TEST(MemoryEstimate, KvCacheFollowsTheCacheGeometry) {
  ModelConfig c;
  c.num_hidden_layers = 16;
  c.num_key_value_heads = 8;
  c.head_dim = 64;
  c.hidden_size = 2048;
  c.num_attention_heads = 32;
  c.intermediate_size = 8192;
  c.vocab_size = 128256;
  const MemoryEstimate f32 = estimate_memory(c, 1000, 4096, DType::F32);
  EXPECT_EQ(f32.kv_bytes_per_token, 2 * 16 * 8 * 64 * 4);
  EXPECT_EQ(f32.kv_cache, f32.kv_bytes_per_token * 4096);
  EXPECT_EQ(f32.weights, 1000);
  EXPECT_EQ(f32.total, f32.weights + f32.kv_cache + f32.activations);
  const MemoryEstimate bf16 = estimate_memory(c, 1000, 4100, DType::BF16);
  EXPECT_EQ(bf16.kv_bytes_per_token, 2 * 16 * 8 * 64 * 2);
  EXPECT_EQ(bf16.kv_cache, bf16.kv_bytes_per_token * 4112);  // whole 16-token blocks
  EXPECT_GT(bf16.activations, 0);
}

}  // namespace
}  // namespace inferdesk

namespace inferdesk {
namespace {

// Dummy weights of a shape hold what the real checkpoint would: a tied shape (the llama fixture)
// reuses its embedding as lm_head instead of loading a separate random head, so the bytes loaded
// are exactly the parameter count's and the load's progress ends at its total, never past it.
TEST(DummyWeights, LoadExactlyTheParametersOfTheShape) {
  for (const char* name : {"llama", "tiny-chat"}) {
    const auto config = test::golden_models_dir() / name / "config.json";
    int64_t last_done = 0, last_total = 0;
    LoadProgress progress = [&](int64_t done, int64_t total) {
      EXPECT_LE(done, total) << name;
      last_done = done;
      last_total = total;
      return true;
    };
    const LoadedModel m = load_dummy_model(config.string(), {}, make_cpu_backend(1), 1, progress);
    EXPECT_EQ(m.weight_bytes, count_parameters(m.config).total * 2) << name;
    EXPECT_EQ(last_total, m.weight_bytes) << name;
    EXPECT_EQ(last_done, last_total) << name;
  }
}

}  // namespace
}  // namespace inferdesk
