// Guard for untrusted JSON text: nlohmann::json copies (and some parse paths) recurse once per
// nesting level, so a hostile file of 100,000 '[' would overflow the stack. Every parse of
// untrusted JSON goes through parse_untrusted_json(), which first checks the nesting depth with a
// linear scan (no recursion) and turns every failure into a typed Error naming the source.
#pragma once

#include <cstddef>
#include <limits>
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

// Limits of the strict parser. The defaults bound nothing but the depth.
struct JsonLimits {
  int max_depth = kDefaultMaxJsonDepth;  // the top-level container is depth 1
  size_t max_object_members = std::numeric_limits<size_t>::max();
};

// Parses untrusted JSON in one linear pass and refuses, with Error(Format) naming `source`, what
// the lenient parsers above accept silently: a key twice in one object ("<source>: duplicate key
// \"k\""; Python's json and nlohmann keep the last, which hides which value the author meant),
// nesting deeper than limits.max_depth, an object with more than limits.max_object_members
// members. Malformed text: "<source>: invalid JSON: <reason>". For model folders and tokenizers.
nlohmann::json parse_untrusted_json_strict(std::string_view text, const std::string& source,
                                           const JsonLimits& limits = {});

// `s` in double quotes for a message, with control bytes (a NUL would end the message) and
// backslashes escaped as \xNN and \\.
std::string quote_untrusted(std::string_view s);

}  // namespace inferdesk
