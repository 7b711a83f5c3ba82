// Python string semantics over UTF-8 std::string, for the chat-template renderer.
//
// Jinja templates run on Python strings: lengths, indices and slices count code points, str.strip()
// strips Unicode whitespace, floats print as repr() does ("1.0", "1e-05"). These helpers reproduce that
// on UTF-8 data. Case mapping covers Latin, Greek, Cyrillic, Armenian and fullwidth Latin letters (the
// scripts chat templates meet); other scripts pass through unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <vector>
#include "core/util/utf8.h"

namespace inferdesk::chat::py {

// ---- UTF-8
// Decodes leniently: a malformed byte becomes U+FFFD (input is validated JSON or template text).
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
using inferdesk::append_utf8;
// Decodes the code point at s[pos] and advances pos past it.
char32_t next_cp(std::string_view s, size_t& pos);
bool is_ascii(std::string_view s);
size_t cp_length(std::string_view s);
bool is_valid_utf8(std::string_view s);

// ---- character classes (Python's definitions, approximated outside the common scripts)
bool is_space(char32_t c);      // str.isspace()
bool is_linebreak(char32_t c);  // str.splitlines() boundaries
bool is_printable(char32_t c);  // str.isprintable(), for repr()
bool is_word(char32_t c);       // regex \w
bool is_digit(char32_t c);      // str.isdigit() (ASCII and common decimal blocks)
bool is_cased(char32_t c);
char32_t to_upper_simple(char32_t c);
char32_t to_lower_simple(char32_t c);

// ---- str methods
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // str.capitalize()
std::string title(std::string_view s);       // str.title()
std::string swapcase(std::string_view s);
// chars == nullopt strips whitespace; otherwise any of the code points in *chars.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// sep == nullopt: split on whitespace runs. maxsplit < 0: no limit. Empty sep throws std::invalid_argument.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// Stops after max_lines + 1 lines (the caller's size limit then refuses the list).
std::vector<std::string> splitlines(std::string_view s, bool keepends, size_t max_lines = SIZE_MAX);
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
int64_t count(std::string_view s, std::string_view sub);
// s.find(sub, from) / s.rfind(sub, from), in linear time also for long needles: std::string_view's
// search is O(len(s) * len(sub)) at worst, minutes for a hostile template's 1 MB needle.
size_t find_sub(std::string_view s, std::string_view sub, size_t from = 0);
size_t rfind_sub(std::string_view s, std::string_view sub, size_t from = std::string_view::npos);
// Code-point index of the first/last occurrence, or -1.
int64_t find(std::string_view s, std::string_view sub);
int64_t rfind(std::string_view s, std::string_view sub);
bool is_alpha_str(std::string_view s);
bool is_digit_str(std::string_view s);
bool is_alnum_str(std::string_view s);
bool is_space_str(std::string_view s);
bool is_upper_str(std::string_view s);
bool is_lower_str(std::string_view s);
// align '<' '>' '^' (format spec), or 'c' for str.center()'s rounding.
std::string pad(std::string_view s, int64_t width, char32_t fill, char align);

// ---- code-point indexing and slicing
// Normalises a Python index (negative counts from the end); nullopt when out of range.
std::optional<size_t> norm_index(int64_t index, size_t length);
// Python slice semantics (start/stop/step optional, step != 0); returns the selected indices.
std::vector<size_t> slice_indices(size_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                                  int64_t step);

// ---- repr / formatting
std::string float_repr(double v);             // repr(float)
std::string str_repr(std::string_view s);     // repr(str), quotes included
std::string html_escape(std::string_view s);  // markupsafe.escape

}  // namespace inferdesk::chat::py
