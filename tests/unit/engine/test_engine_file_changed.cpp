// Model files that are not what they were: a model file truncated on disk while the model is
// loaded (a download or a quantization writing over it): the CPU backend reads weights from the
// mapping, so the next step touched lost pages and SIGBUS killed the process. Now the request
// fails with a message naming the file, and the process lives on. And a FIFO given as a shape.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

// --shape takes a config.json path too: a FIFO there blocked std::ifstream forever.
TEST(ModelFileChanged, FifoShapeFileIsRefusedWithoutBlocking) {
  const fs::path fifo = fs::temp_directory_path() / ("inferdesk-shape-" + std::to_string(std::random_device{}()));
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto done = std::async(std::launch::async, [&] {
    try {
      load_dummy_model(fifo.string(), fs::temp_directory_path(), make_cpu_backend());
      ADD_FAILURE() << "loaded a FIFO";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Format) << e.what();
      EXPECT_NE(std::string(e.what()).find("not a regular file (a FIFO)"), std::string::npos) << e.what();
    }
  });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on the FIFO";
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // wake the reader
    done.wait();
    if (fd >= 0) ::close(fd);
  }
  fs::remove(fifo);
}

}  // namespace
}  // namespace inferdesk
