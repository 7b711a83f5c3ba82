// Hostile model folders (issue 31): FIFOs where files should be, files truncated under their
// mapping, headers with very many tensors, duplicate JSON keys, files in another format named
// .safetensors, control characters in names. Each must end in a typed error, in bounded time.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/io/mapped_file.h"
#include "core/io/mapping_guard.h"
#include "core/io/model_folder.h"
#include "core/io/safetensors.h"
#include "core/util/error.h"
#include "tests/unit/io/st_writer.h"

namespace inferdesk {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::kTinyConfig;
using test::TempDir;
using test::valid_safetensors;
using test::write_file;

// Runs `f` on a thread; when it has not returned after `limit` (it blocks on the FIFO), opens the
// FIFO for writing so the blocked reader wakes up, and fails the test.
template <typename F>
void expect_returns_within(const fs::path& fifo, std::chrono::seconds limit, F&& f) {
  auto done = std::async(std::launch::async, std::forward<F>(f));
  if (done.wait_for(limit) == std::future_status::ready) {
    done.get();
    return;
  }
  ADD_FAILURE() << "still blocked on " << fifo << " after " << limit.count() << " s";
  int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  done.wait();
  if (fd >= 0) ::close(fd);
}

class HostileFolderTest : public ::testing::Test {
 protected:
  fs::path dir() const { return tmp_.path() / "model"; }
  void SetUp() override {
    fs::create_directories(dir());
    write_file(dir() / "config.json", kTinyConfig);
  }
  void make_fifo(const fs::path& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << p; }
  TempDir tmp_;
};

TEST_F(HostileFolderTest, FifoSafetensorsIsRefusedWithoutBlocking) {
  const fs::path p = dir() / "model.safetensors";
  make_fifo(p);
  expect_returns_within(p, std::chrono::seconds(5), [&] {
    expect_error([&] { MappedFile::open(p); }, ErrorCode::Format, {p.string(), "not a regular file (a FIFO)"});
  });
  expect_returns_within(p, std::chrono::seconds(5), [&] {
    expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"model.safetensors", "a FIFO"});
  });
}

TEST_F(HostileFolderTest, FifoConfigJsonIsRefusedWithoutBlocking) {
  write_file(dir() / "model.safetensors", valid_safetensors({{"embed", "F32", {16, 8}, 4}}));
  for (const char* name : {"config.json", "generation_config.json", "model.safetensors.index.json"}) {
    SCOPED_TRACE(name);
    const fs::path p = dir() / name;
    fs::remove(p);
    make_fifo(p);
    expect_returns_within(p, std::chrono::seconds(5), [&] {
      expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {name, "not a regular file (a FIFO)"});
    });
    fs::remove(p);
    if (std::string(name) == "config.json") write_file(p, kTinyConfig);
  }
}

TEST_F(HostileFolderTest, DirectoryNamedModelSafetensorsIsNamed) {
  fs::create_directories(dir() / "model.safetensors");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format, {"model.safetensors", "a directory"});
}

TEST_F(HostileFolderTest, DuplicateKeyInConfigJsonIsRefused) {
  // num_hidden_layers 2 then 1: Python's json keeps the last; which one the author meant is unknown.
  write_file(dir() / "config.json", R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
    "vocab_size": 16, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1})");
  write_file(dir() / "model.safetensors", valid_safetensors({{"embed", "F32", {16, 8}, 4}}));
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format,
               {"config.json", "duplicate key \"num_hidden_layers\""});
}

TEST_F(HostileFolderTest, DuplicateKeyInGenerationConfigIsRefused) {
  write_file(dir() / "generation_config.json", R"({"eos_token_id": 1, "temperature": 0.5, "eos_token_id": 2})");
  write_file(dir() / "model.safetensors", valid_safetensors({{"embed", "F32", {16, 8}, 4}}));
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format,
               {"generation_config.json", "duplicate key \"eos_token_id\""});
}

TEST_F(HostileFolderTest, DuplicateKeyInIndexIsRefused) {
  write_file(dir() / "a.safetensors", valid_safetensors({{"embed", "F32", {16, 8}, 4}}));
  write_file(dir() / "model.safetensors.index.json",
             R"({"weight_map": {"embed": "a.safetensors", "embed": "b.safetensors"}})");
  expect_error([&] { ModelFolder::open(dir()); }, ErrorCode::Format,
               {"model.safetensors.index.json", "duplicate key \"embed\""});
}

TEST_F(HostileFolderTest, NulInShardNameIsEscapedNotCut) {
  const std::string index = std::string(R"({"weight_map": {"embed": "a)") + "\\u0000" + R"(b.safetensors"}})";
  write_file(dir() / "model.safetensors.index.json", index);
  try {
    ModelFolder::open(dir());
    ADD_FAILURE() << "accepted a shard name with a NUL";
  } catch (const Error& e) {
    const std::string msg = e.what();  // what the user sees: up to the first NUL
    EXPECT_EQ(e.code(), ErrorCode::Format) << msg;
    EXPECT_NE(msg.find("\"a\\x00b.safetensors\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("not a plain file name"), std::string::npos) << msg;
  }
}

// Another format's magic bytes under a .safetensors name: say what the file is.
TEST_F(HostileFolderTest, PickleZipAndGgufNamedSafetensorsAreNamed) {
  struct Case {
    std::string bytes;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {std::string("\x80\x02\x63__builtin__\neval\n", 18) + std::string(64, 'x'), {"pickle", "arbitrary code"}},
      {std::string("\x80\x04\x95\x10\0\0\0\0\0\0\0", 11) + std::string(64, 'x'), {"pickle", "arbitrary code"}},
      {std::string("PK\x03\x04", 4) + std::string(64, '\0'), {"zip archive", "torch.save", "pickle"}},
      {std::string("GGUF\x03\0\0\0", 8) + std::string(64, '\0'), {"GGUF", "llama.cpp"}},
  };
  const fs::path p = dir() / "model.safetensors";
  for (const Case& c : cases) {
    write_file(p, c.bytes);
    std::vector<std::string> parts = c.parts;
    parts.push_back(p.string());
    expect_error([&] { SafetensorsFile::open(p); }, ErrorCode::Unsupported, parts);
  }
}

// A header of `n` F32 scalars, "t0".."t{n-1}", laid out back to back.
std::string header_with(size_t n) {
  std::string h = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i) h += ',';
    h += "\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" + std::to_string(4 * i) +
         "," + std::to_string(4 * i + 4) + "]}";
  }
  return h + "}";
}

// The header parse was quadratic in the tensor count (10k: 2 s, 50k: > 60 s); 200k must take well
// under a second. The bound is generous so that a loaded machine does not make it flaky.
TEST(HostileHeader, ManyTensorsParseInLinearTime) {
  const size_t n = 200'000;
  const std::string h = header_with(n);
  const auto t0 = std::chrono::steady_clock::now();
  SafetensorsHeader parsed = parse_safetensors_header(h, nullptr, 4 * n, "many.safetensors");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(parsed.tensors.size(), n);
  EXPECT_LT(s, 5.0) << n << " tensors took " << s << " s";
}

TEST(HostileHeader, TensorCountIsCapped) {
  const size_t n = kSafetensorsMaxTensors + 2;  // + 1 would be allowed: room for "__metadata__"
  expect_error([&] { parse_safetensors_header(header_with(n), nullptr, 4 * n, "capped.safetensors"); },
               ErrorCode::Format, {"capped.safetensors", "more than " + std::to_string(kSafetensorsMaxTensors + 1)});
}

TEST(HostileHeader, DuplicateTensorNameNamesTheKey) {
  const std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  expect_error([&] { parse_safetensors_header(h, nullptr, 8, "dup.safetensors"); }, ErrorCode::Format,
               {"dup.safetensors", "duplicate key \"a\""});
}

// A mapped file cut to zero bytes by another process: reading the lost pages raised SIGBUS and
// killed the process. Now the reads see zeros and the file says it was invalidated.
TEST(HostileMapping, TruncatedWhileMappedDoesNotKillTheProcess) {
  TempDir tmp;
  const fs::path p = tmp.path() / "w.safetensors";
  const size_t size = 3 * 65536;
  write_file(p, std::string(size, '\x7f'));
  MappedFile f = MappedFile::open(p);
  ASSERT_EQ(f.size(), size);
  EXPECT_EQ(static_cast<int>(f.data()[0]), 0x7f);
  fs::resize_file(p, 0);
  EXPECT_FALSE(f.invalidated()) << "nothing read since the truncation yet";
  unsigned sum = 0;
  for (size_t i = 0; i < size; i += 4096) sum += static_cast<unsigned>(f.data()[i]);
  EXPECT_EQ(sum, 0u) << "pages past the new end read as zeros";
  EXPECT_TRUE(f.invalidated());
  EXPECT_GT(MappingGuard::faults_handled(), 0u);
  const Error e = f.changed_on_disk_error();
  EXPECT_EQ(e.code(), ErrorCode::Io);
  EXPECT_NE(std::string(e.what()).find(p.string() + ": the model file changed on disk while loaded"), std::string::npos)
      << e.what();
}

// Cut to one page, then read from several threads: every reader completes, the file says so.
TEST(HostileMapping, PartlyTruncatedReadFromThreads) {
  TempDir tmp;
  const fs::path p = tmp.path() / "w.safetensors";
  write_file(p, std::string(64 * 4096, '\x01'));
  MappedFile f = MappedFile::open(p);
  MappedFile other = MappedFile::open(p);  // a second mapping of the same file, never read
  fs::resize_file(p, 4096);
  std::vector<std::thread> readers;
  std::atomic<unsigned> sum{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t) * 4096; i < f.size(); i += 4 * 4096)
        sum += static_cast<unsigned>(f.data()[i]);
    });
  }
  for (auto& r : readers) r.join();
  EXPECT_LE(sum.load(), 1u) << "at most the first page, read before a fault replaced it, is non-zero";
  EXPECT_TRUE(f.invalidated());
  EXPECT_FALSE(other.invalidated()) << "only the mapping that faulted is marked";
}

// SIGBUS that is not ours still kills: a fault in an unguarded mapping, and one sent by kill().
TEST(HostileMappingDeathTest, FaultsOutsideGuardedRangesKeepTheirDefaultAction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir tmp;
  const fs::path p = tmp.path() / "plain.bin";
  write_file(p, std::string(2 * 4096, '\x01'));
  MappedFile guarded = MappedFile::open(p);  // installs the handler in this process
  ASSERT_NE(guarded.data(), nullptr);
  EXPECT_EXIT(
      {
        const int fd = ::open(p.c_str(), O_RDONLY);
        void* raw = ::mmap(nullptr, 2 * 4096, PROT_READ, MAP_SHARED, fd, 0);
        if (::ftruncate(::open(p.c_str(), O_WRONLY), 0) != 0) std::_Exit(2);
        volatile char c = static_cast<const char*>(raw)[4096];
        (void)c;
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGBUS), "");
  EXPECT_EXIT(
      {
        ::raise(SIGBUS);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

}  // namespace
}  // namespace inferdesk
