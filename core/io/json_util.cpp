#include "core/io/json_util.h"

#include "core/util/json_guard.h"
#include "core/util/regular_file.h"

namespace inferdesk {

std::string read_file_bounded(const std::filesystem::path& path, size_t max_bytes) {
  return read_regular_file(path, max_bytes);
}

nlohmann::json parse_json_strict(std::string_view text, const std::string& source, int max_depth,
                                 size_t max_object_members) {
  return parse_untrusted_json_strict(text, source, JsonLimits{max_depth, max_object_members});
}

nlohmann::json parse_json_lenient(std::string_view text, const std::string& source) {
  return parse_untrusted_json(text, source);
}

}  // namespace inferdesk
