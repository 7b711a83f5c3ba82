// Guard for untrusted JSON text: nlohmann::json copies (and some parse paths) recurse once per
// nesting level, so a hostile file of 100,000 '[' would overflow the stack. Every parse of
// untrusted JSON goes through parse_untrusted_json(), which first checks the nesting depth with a
// linear scan (no recursion) and turns every failure into a typed Error naming the source.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace inferdesk {

constexpr int kDefaultMaxJsonDepth = 256;

// Throws Error(Format) "<source>: JSON nested deeper than N levels" when arrays/objects nest more
// than max_depth (strings are skipped correctly, escapes included).
void check_json_depth(std::string_view text, const std::string& source, int max_depth = kDefaultMaxJsonDepth);

// Depth check + parse; Error(Format) "<source>: invalid JSON: <reason>" on malformed text.
nlohmann::json parse_untrusted_json(std::string_view text, const std::string& source,
                                    int max_depth = kDefaultMaxJsonDepth);
nlohmann::ordered_json parse_untrusted_ordered_json(std::string_view text, const std::string& source,
                                                    int max_depth = kDefaultMaxJsonDepth);

}  // namespace inferdesk
