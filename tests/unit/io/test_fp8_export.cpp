// Saving an FP8 compressed-tensors folder: for every architecture's BF16 golden checkpoint, the
// saved tensors (names, dtypes, shapes and bytes) and quantization_config equal those of the
// fixture tools/golden/make_fp8_golden.py packed with torch from the compressed-tensors definition;
// the folder loads back as published; failures leave nothing behind.
#include <set>

#include "core/backend/backend.h"
#include "core/engine/generate.h"
#include "core/engine/model_loader.h"
#include "core/io/fp8_export.h"
#include "core/io/json_util.h"
#include "core/io/safetensors.h"
#include "tests/unit/io/st_writer.h"

namespace inferdesk::test {
namespace {

const std::filesystem::path kGolden = std::filesystem::path(INFERDESK_TEST_SOURCE_DIR) / "tests/golden";

nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

class Fp8ExportTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

TEST_P(Fp8ExportTest, SavesWhatTheReferencePackerWrites) {
  const auto out = dir_.path() / "fp8";
  const ModelFolder src = ModelFolder::open(kGolden / "models" / GetParam());
  const Fp8ExportResult r = export_fp8_compressed_tensors(src, out);
  EXPECT_GT(r.quantized, 0);
  const ModelFolder mine = ModelFolder::open(out),
                    ref = ModelFolder::open(kGolden / "models-fp8" / (GetParam() + "-channel"));
  ASSERT_EQ(mine.tensor_names(), ref.tensor_names());
  for (const std::string& n : ref.tensor_names()) {
    const HostTensor &a = *mine.find(n), &b = *ref.find(n);
    EXPECT_EQ(a.dtype, b.dtype) << n;
    EXPECT_EQ(a.shape, b.shape) << n;
    ASSERT_EQ(a.nbytes, b.nbytes) << n;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << n << " holds other bytes";
  }
  nlohmann::json qa = read_json(out / "config.json")["quantization_config"];
  nlohmann::json qb = read_json(kGolden / "models-fp8" / (GetParam() + "-channel") /
                                "config.json")["quantization_config"];
  const auto ia = qa["ignore"].get<std::set<std::string>>(), ib = qb["ignore"].get<std::set<std::string>>();
  EXPECT_EQ(ia, ib);
  qa.erase("ignore");
  qb.erase("ignore");
  EXPECT_EQ(qa, qb);
}

TEST_P(Fp8ExportTest, LoadsBackWithoutQuantizingAgain) {
  const auto out = dir_.path() / "fp8";
  export_fp8_compressed_tensors(ModelFolder::open(kGolden / "models" / GetParam()), out);
  LoadedModel saved = load_model_folder(out, make_cpu_backend(1));
  EXPECT_NE(saved.quantization.find("compressed-tensors"), std::string::npos) << saved.quantization;
  LoadOptions lo;
  lo.quantization = LoadQuantization::Fp8;
  LoadedModel on_load = load_model_folder(kGolden / "models" / GetParam(), make_cpu_backend(1), {}, lo);
  Request r;
  r.prompt_ids = {5, 17, 42, 99};
  r.params.temperature = 0;
  r.params.max_tokens = 8;
  r.params.ignore_eos = true;
  r.params.logprobs = 1;
  EngineOptions eo;
  eo.num_kv_blocks = 16;
  Engine a(std::move(saved), eo), b(std::move(on_load), eo);
  const GenerationResult ra = generate_all(a, {r}).at(0), rb = generate_all(b, {r}).at(0);
  EXPECT_EQ(ra.token_ids(), rb.token_ids());
  ASSERT_EQ(ra.tokens.size(), 8u);
  ASSERT_EQ(rb.tokens.size(), 8u);
  for (size_t i = 0; i < ra.tokens.size(); ++i) EXPECT_EQ(ra.tokens[i].logprob, rb.tokens[i].logprob) << i;
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, Fp8ExportTest,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"));

TEST(Fp8Export, RefusesAndLeavesNothingBehind) {
  TempDir dir;
  const ModelFolder src = ModelFolder::open(kGolden / "models" / "qwen3");
  std::filesystem::create_directories(dir.path() / "exists");
  EXPECT_THROW(export_fp8_compressed_tensors(src, dir.path() / "exists"), Error);
  EXPECT_THROW(export_fp8_compressed_tensors(ModelFolder::open(kGolden / "models-fp8" / "qwen3-channel"),
                                             dir.path() / "twice"),
               Error);
  Fp8ExportOptions o;
  o.max_shard_bytes = 200'000;  // several shards, then a cancel half-way
  o.progress = [](int64_t done, int64_t total) { return done < total / 2; };
  try {
    export_fp8_compressed_tensors(src, dir.path() / "cancelled", o);
    ADD_FAILURE() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Cancelled);
  }
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) entries += e.path().filename() != "exists";
  EXPECT_EQ(entries, 0) << "a cancelled save left files";
  // Sharded output with an index loads like one file.
  o.progress = {};
  const Fp8ExportResult r = export_fp8_compressed_tensors(src, dir.path() / "sharded", o);
  EXPECT_GT(r.shards, 1);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "sharded" / "model.safetensors.index.json"));
  EXPECT_NE(load_model_folder(dir.path() / "sharded", make_cpu_backend(1)).quantization, "none");
}

}  // namespace
}  // namespace inferdesk::test
