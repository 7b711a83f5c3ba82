#include "core/io/json_util.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <system_error>
#include <vector>

#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk {

std::string read_file_bounded(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw Error(ErrorCode::NotFound, path.string() + ": file not found");
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw Error(ErrorCode::Format, path.string() + ": not a regular file");
  }
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorCode::Io, path.string() + ": cannot read size: " + ec.message());
  if (size > max_bytes) {
    throw Error(ErrorCode::Format, path.string() + ": file is " + std::to_string(size) +
                                       " bytes, larger than the limit of " + std::to_string(max_bytes) +
                                       " bytes for this kind of file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::Io, path.string() + ": cannot open: " + std::strerror(errno));
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (static_cast<uintmax_t>(in.gcount()) != size) {
    throw Error(ErrorCode::Io, path.string() + ": short read (file changed while reading?)");
  }
  return text;
}

nlohmann::json parse_json_strict(std::string_view text, const std::string& source, int max_depth) {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::vector<bool> is_object;              // kind of each open container
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth + 1 > max_depth) {
          throw Error(ErrorCode::Format, source + ": JSON nested deeper than " + std::to_string(max_depth) + " levels");
        }
        is_object.push_back(event == json::parse_event_t::object_start);
        if (is_object.back()) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!is_object.empty()) {
          if (is_object.back()) keys.pop_back();
          is_object.pop_back();
        }
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string()) {
          const auto& k = parsed.get_ref<const std::string&>();
          if (!keys.back().insert(k).second) {
            throw Error(ErrorCode::Format, source + ": duplicate key \"" + k + "\"");
          }
        }
        break;
      case json::parse_event_t::value: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::Format, source + ": invalid JSON: " + e.what());
  }
}

nlohmann::json parse_json_lenient(std::string_view text, const std::string& source) {
  return parse_untrusted_json(text, source);
}

}  // namespace inferdesk
