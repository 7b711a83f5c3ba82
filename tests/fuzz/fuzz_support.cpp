#include "tests/fuzz/fuzz_support.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <system_error>
#include "core/util/json_guard.h"

namespace inferdesk::fuzz {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMarker = "%%FILE ";

// Where the next part's marker starts at or after `from` (npos when none): at the very start of
// the input, or right after a newline.
size_t next_marker(std::string_view s, size_t from) {
  if (from == 0 && s.substr(0, kMarker.size()) == kMarker) return 0;
  const size_t at = s.find(std::string("\n").append(kMarker), from == 0 ? 0 : from - 1);
  return at == std::string_view::npos ? at : at + 1;
}

}  // namespace

std::vector<Part> split_parts(std::string_view input, std::string_view first_name, size_t max_parts) {
  std::vector<Part> parts;
  size_t marker = next_marker(input, 0);
  const size_t first_end = marker == std::string_view::npos ? input.size() : (marker == 0 ? 0 : marker - 1);
  if (marker != 0) parts.push_back({std::string(first_name), input.substr(0, first_end)});
  while (marker != std::string_view::npos && parts.size() < max_parts) {
    const size_t name_begin = marker + kMarker.size();
    size_t name_end = input.find('\n', name_begin);
    if (name_end == std::string_view::npos) name_end = input.size();
    const size_t body_begin = std::min(input.size(), name_end + 1);
    const size_t next = next_marker(input, body_begin);
    const size_t body_end = next == std::string_view::npos ? input.size() : next - 1;
    parts.push_back({std::string(input.substr(name_begin, name_end - name_begin)),
                     input.substr(body_begin, body_end >= body_begin ? body_end - body_begin : 0)});
    marker = next;
  }
  return parts;
}

const Part* find_part(const std::vector<Part>& parts, std::string_view name) {
  for (const Part& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

bool safe_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/inferdesk-fuzz-XXXXXX";
  if (!mkdtemp(tmpl.data())) std::abort();  // no scratch folder: nothing sensible to fuzz
  path_ = tmpl;
  // Removed at exit, also when libFuzzer ends the run through exit().
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(ScratchDir::get().path(), ec);
  });
}

ScratchDir& ScratchDir::get() {
  // Never destroyed: the atexit handler above still reads it after static destructors ran.
  static ScratchDir* dir = new ScratchDir;
  return *dir;
}

void ScratchDir::clear() {
  std::error_code ec;
  for (fs::directory_iterator it(path_, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    fs::remove_all(it->path(), ec2);
  }
}

bool ScratchDir::write(std::string_view name, std::string_view content) {
  if (!safe_name(name)) return false;
  std::ofstream out(path_ / std::string(name), std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  return static_cast<bool>(out);
}

fs::path shared_dir() {
  const char* env = std::getenv("INFERDESK_SHARED_DIR");
  if (env && *env) return env;
  return INFERDESK_SHARED_DIR;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::optional<nlohmann::json> parse_config_json(const uint8_t* data, size_t size) {
  try {
    return parse_untrusted_json(std::string_view(reinterpret_cast<const char*>(data), size), "config.json");
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace inferdesk::fuzz
