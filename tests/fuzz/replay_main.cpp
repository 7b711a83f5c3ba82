// main() of a fuzz target in a build without libFuzzer (g++): runs each file named on the command
// line (or every file under a named folder) once through LLVMFuzzerTestOneInput, as
// `target -runs=0 FILES...` does in the libFuzzer build. Used by ctest's `fuzz` label to replay the
// committed corpus and the regressions in the ordinary build.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    if (arg.string().rfind("-", 0) == 0) continue;  // libFuzzer flags: ignored here
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(arg, ec)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    // Printed first, so that a crash's log names the input that caused it.
    std::fprintf(stderr, "replay: %s\n", f.c_str());
    const std::string bytes = inferdesk::fuzz::read_file(f);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "replay: %zu inputs ran cleanly\n", files.size());
  return 0;
}
