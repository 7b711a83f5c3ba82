// A model file truncated on disk while the model is loaded (a download or a quantization writing
// over it): the CPU backend reads weights from the mapping, so the next step touched lost pages
// and SIGBUS killed the process. Now the request fails with a message naming the file, and the
// process lives on.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "core/util/error.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

namespace fs = std::filesystem;

Request greedy(int32_t max_tokens) {
  Request r;
  r.prompt_ids = {3, 17, 42, 99};
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

TEST(ModelFileChanged, TruncatedBetweenRequestsFailsTheRequestNotTheProcess) {
  const fs::path dir = fs::temp_directory_path() / ("inferdesk-trunc-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    fs::copy_file(test::golden_models_dir() / "qwen2" / f, dir / f);
  {
    Engine e(load_model_folder(dir, make_cpu_backend()), EngineOptions{});
    const auto before = generate_all(e, {greedy(4)});
    ASSERT_EQ(before[0].reason, FinishReason::Length) << before[0].error;
    fs::resize_file(dir / "model.safetensors", 0);
    const auto after = generate_all(e, {greedy(4)});
    EXPECT_EQ(after[0].reason, FinishReason::Error);
    EXPECT_NE(after[0].error.find("model.safetensors"), std::string::npos) << after[0].error;
    EXPECT_NE(after[0].error.find("changed on disk while loaded"), std::string::npos) << after[0].error;
    // The model stays refused until it is loaded again: its weights are gone.
    EXPECT_EQ(generate_all(e, {greedy(2)})[0].reason, FinishReason::Error);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace inferdesk
