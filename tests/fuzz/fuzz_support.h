// Helpers shared by the fuzz targets: the multi-file input format, a per-process scratch folder
// and the location of the shared test data. See tests/fuzz/README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util/error.h"

namespace inferdesk::fuzz {

// One file of a multi-file input.
struct Part {
  std::string name;
  std::string_view content;
};

// Splits an input holding several files. Each file after the first starts with a line
// "%%FILE <name>" (the newline before the marker belongs to the marker); text before the first
// marker is the file `first_name`, so a plain real file (a config.json, a template) is itself a
// valid input. At most `max_parts` parts are returned; names are not checked (see safe_name).
std::vector<Part> split_parts(std::string_view input, std::string_view first_name, size_t max_parts = 8);

// The content of the part called `name`, or nullptr.
const Part* find_part(const std::vector<Part>& parts, std::string_view name);

// Whether `name` may become a file name in the scratch folder: 1..64 of [A-Za-z0-9._-], not
// starting with '.', so a fuzzed name can never leave the folder.
bool safe_name(std::string_view name);

// A folder under $TMPDIR created on first use and removed at exit; one per process, reused for
// every input so that a run does not create thousands of folders.
class ScratchDir {
 public:
  static ScratchDir& get();
  const std::filesystem::path& path() const { return path_; }
  // Removes everything inside the folder.
  void clear();
  // Writes `content` to path()/name; false (nothing written) for an unsafe name.
  bool write(std::string_view name, std::string_view content);

 private:
  ScratchDir();
  std::filesystem::path path_;
};

// The shared test data (tokenizers/, chat-templates/): $INFERDESK_SHARED_DIR, else the folder
// configured at build time. May not exist (targets then skip what needs it).
std::filesystem::path shared_dir();

// Reads a whole file; empty when it cannot be read.
std::string read_file(const std::filesystem::path& path);

// The input as JSON the way a model folder's config.json is read (lenient about duplicate keys,
// so the parsers after it see more shapes); nullopt when it is not JSON, a typed error already.
std::optional<nlohmann::json> parse_config_json(const uint8_t* data, size_t size);

// Runs `f` and swallows inferdesk::Error: a typed error is the expected end of a hostile input.
// Anything else (another exception, a crash, a sanitizer report) escapes and is a finding.
template <typename F>
void expect_typed_errors(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

}  // namespace inferdesk::fuzz
