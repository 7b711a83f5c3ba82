#include "core/util/json_guard.h"

#include "core/util/error.h"

namespace inferdesk {

void check_json_depth(std::string_view text, const std::string& source, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth)
          throw Error(ErrorCode::Format, source + ": JSON nested deeper than " + std::to_string(max_depth) + " levels");
        break;
      case ']':
      case '}': --depth; break;
      default: break;
    }
  }
}

template <typename J>
static J parse_checked(std::string_view text, const std::string& source, int max_depth) {
  check_json_depth(text, source, max_depth);
  try {
    return J::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::Format, source + ": invalid JSON: " + e.what());
  }
}

nlohmann::json parse_untrusted_json(std::string_view text, const std::string& source, int max_depth) {
  return parse_checked<nlohmann::json>(text, source, max_depth);
}

nlohmann::ordered_json parse_untrusted_ordered_json(std::string_view text, const std::string& source, int max_depth) {
  return parse_checked<nlohmann::ordered_json>(text, source, max_depth);
}

}  // namespace inferdesk
