// Built-in filters, tests, methods and globals of the chat-template renderer (internal).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/value.h"

namespace inferdesk::chat {

using FilterFn = Value (*)(Interp&, const Value&, CallArgs&);
using TestFn = bool (*)(Interp&, const Value&, CallArgs&);

struct FilterDef {
  const char* name;
  FilterFn fn;  // null: a jinja2 filter InferDesk does not implement (fails when run)
};

struct TestDef {
  const char* name;
  TestFn fn;
};

// Filters and tests of jinja2 (plus transformers' tojson); nullptr for names jinja2 does not know.
const FilterDef* find_filter(std::string_view name);
const TestDef* find_test(std::string_view name);

// Binds call arguments to named parameters the way Python does (positional first, then keywords).
class ArgReader {
 public:
  ArgReader(std::string_view function, const CallArgs& args, std::initializer_list<const char*> params);
  const Value* get(size_t index) const { return slots_[index]; }
  bool has(size_t index) const { return slots_[index] != nullptr; }
  Value value_or(size_t index, Value fallback) const;
  bool bool_or(size_t index, bool fallback) const;
  int64_t int_or(size_t index, int64_t fallback) const;    // TypeError unless an int
  std::optional<std::string> str_opt(size_t index) const;  // TypeError unless a str (or none → nullopt)
  std::string str_or(size_t index, std::string fallback) const;
  const std::string& function() const { return function_; }

 private:
  std::string function_;
  std::vector<const char*> names_;
  std::vector<const Value*> slots_;
};

// The sandbox's attribute and item lookup (ImmutableSandboxedEnvironment.getattr / getitem).
// Missing: Undefined with jinja2's message. Methods come back as bound functions; mutating list and
// dict methods come back as "unsafe" Undefined values that raise a security error when called.
Value get_attribute(const Value& obj, std::string_view name);
Value get_item(const Value& obj, const Value& key);

// Calls obj.name(args) for str/dict/list methods without creating a bound function. Returns false
// when obj has no such method (the caller then falls back to get_attribute + call).
bool call_method(Interp& interp, const Value& obj, std::string_view name, CallArgs& args, Value* result);

// Globals of the environment: range, dict, namespace, cycler, joiner, raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> make_globals();

// json.dumps(value, ensure_ascii, indent, separators, sort_keys) as Python writes it.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  size_t max_bytes = kDefaultTextLimit;  // Limit error when the text would grow past this
};
std::string json_dumps(const Value& value, const JsonDumpOptions& options);

// Size of s.replace(old, new, count) without building it (for the size limit).
size_t replaced_size(const std::string& s, const std::string& old_s, const std::string& new_s, int64_t count);

// Python str.format / printf-style "%" formatting.
std::string str_format(Interp& interp, const std::string& format, const CallArgs& args);
std::string percent_format(const std::string& format, const Value& args);

// A Python iterator over precomputed items (type_name: "generator", "list_reverseiterator", ...).
// When computing an item raised, `error` is thrown once the consumer reaches item `error_at`.
Value make_iterator(std::string type_name, std::vector<Value> items, std::optional<EvalError> error = std::nullopt,
                    size_t error_at = 0);

// Iterates a value the way Python's iter() does (list items, dict keys, string characters,
// nothing for Undefined); TypeError for values that are not iterable.
std::vector<Value> iterate(const Value& v);

// Python's "in" (TypeError where Python raises one).
bool contains(const Value& container, const Value& item);

}  // namespace inferdesk::chat
