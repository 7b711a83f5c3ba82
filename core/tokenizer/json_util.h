// Small helpers for reading tokenizer JSON files into typed errors.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk::tok {

[[noreturn]] inline void fail(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::Tokenizer, where + ": " + what);
}

inline const nlohmann::json& member(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object()) fail(where, "expected a JSON object");
  auto it = j.find(key);
  if (it == j.end()) fail(where, std::string("missing field \"") + key + "\"");
  return *it;
}

inline std::string get_string(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = member(j, key, where);
  if (!v.is_string()) fail(where + "." + key, "expected a string");
  return v.get<std::string>();
}

inline std::string get_string_or(const nlohmann::json& j, const char* key, const std::string& def,
                                 const std::string& where) {
  if (!j.is_object()) fail(where, "expected a JSON object");
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_string()) fail(where + "." + key, "expected a string");
  return it->get<std::string>();
}

inline bool get_bool_or(const nlohmann::json& j, const char* key, bool def, const std::string& where) {
  if (!j.is_object()) fail(where, "expected a JSON object");
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_boolean()) fail(where + "." + key, "expected true or false");
  return it->get<bool>();
}

inline long long get_int_or(const nlohmann::json& j, const char* key, long long def, long long lo, long long hi,
                            const std::string& where) {
  if (!j.is_object()) fail(where, "expected a JSON object");
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_number_integer()) fail(where + "." + key, "expected an integer");
  const long long v = it->get<long long>();
  if (v < lo || v > hi)
    fail(where + "." + key,
         "value " + std::to_string(v) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

// Errors of the shared readers (Format: bad JSON, a duplicate key, a FIFO) become Tokenizer
// errors, as every other problem of a tokenizer file.
template <typename F>
auto as_tokenizer_error(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Format) throw;
    throw Error(ErrorCode::Tokenizer, e.what());
  }
}

// Strict: a key twice (a token twice in a vocabulary) is an error, not "the last wins".
inline nlohmann::json parse_json_file_text(std::string_view text, const std::string& name) {
  return as_tokenizer_error([&] { return parse_untrusted_json_strict(text, name); });
}

// The "type" field of a stage object.
inline std::string stage_type(const nlohmann::json& j, const std::string& where) {
  return get_string(j, "type", where);
}

// A {"String": "..."} or {"Regex": "..."} pattern object.
struct PatternSpec {
  bool is_regex = false;
  std::string text;
};

inline PatternSpec get_pattern(const nlohmann::json& j, const std::string& where) {
  const auto& p = member(j, "pattern", where);
  if (p.is_object()) {
    if (auto it = p.find("String"); it != p.end() && it->is_string()) return {false, it->get<std::string>()};
    if (auto it = p.find("Regex"); it != p.end() && it->is_string()) return {true, it->get<std::string>()};
  }
  fail(where + ".pattern", "expected {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace inferdesk::tok
