// The value type of the chat-template renderer: what a Python object is to jinja2.
//
// none / bool / int / float / str (optionally "safe", i.e. markupsafe.Markup) / list (or tuple) /
// dict (insertion-ordered, like Python's) / function (natives, macros, bound methods) / object
// (namespace(), the loop variable) / undefined (carrying the message jinja2 would raise with when it
// is used in a way an Undefined cannot be). Containers are shared and immutable — the sandbox
// transformers renders with forbids mutating lists and dicts — except namespace objects.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace inferdesk::chat {

class Value;
class Interp;

// Arguments of a call: positional, then keyword (in source order).
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

// What went wrong while rendering; mirrors the Python exception jinja2 would raise.
enum class EvalErrorKind {
  Type,          // TypeError
  Value,         // ValueError
  Undefined,     // jinja2.UndefinedError
  Security,      // jinja2.sandbox.SecurityError
  ZeroDivision,  // ZeroDivisionError
  Overflow,      // OverflowError (also ranges the sandbox refuses)
  Raised,        // raise_exception() in the template
  Limit,         // a RenderLimits bound was reached
  Syntax,        // a construct that only fails when it runs (unknown filter in a guarded branch)
};

class EvalError : public std::runtime_error {
 public:
  EvalError(EvalErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  EvalErrorKind kind() const { return kind_; }
  bool has_pos() const { return line_ != 0; }
  uint32_t line() const { return line_; }
  uint32_t column() const { return column_; }
  void set_pos(uint32_t line, uint32_t column) {
    line_ = line;
    column_ = column;
  }

 private:
  EvalErrorKind kind_;
  uint32_t line_ = 0;
  uint32_t column_ = 0;
};

[[noreturn]] void throw_type_error(const std::string& message);

struct UndefinedInfo {
  std::string message;  // e.g. "'x' is undefined", "'dict object' has no attribute 'y'"
  bool unsafe = false;  // an attribute the sandbox forbids: using it raises a SecurityError
};

class Dict;

// namespace(), loop, ...: objects with attributes.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string_view type_name() const = 0;
  // Undefined when there is no such attribute.
  virtual Value get_attr(std::string_view name) const = 0;
  // Only namespaces accept attribute assignment.
  virtual bool set_attr(const std::string& name, Value value);
  // Appends repr(self). depth: nesting of the repr() in progress (objects may contain themselves);
  // limit: the most bytes `out` may grow to (Limit error beyond).
  virtual void repr_into(std::string& out, int depth, size_t limit) const;
  virtual bool callable() const { return false; }
  virtual Value call(Interp& interp, CallArgs& args);
  // Drops what the object refers to (end of render, to break reference cycles).
  virtual void clear() {}
  // Python iterators (the generators filters such as map/select return, reversed(), dict item
  // iterators): iterating consumes them, they have no len() and are not JSON serializable.
  virtual bool is_iterator() const { return false; }
  virtual std::vector<Value> drain();  // the remaining items (throws a deferred error, if any)
  virtual std::optional<Value> next_item();
  virtual bool is_namespace() const { return false; }
};

struct Function {
  using Fn = std::function<Value(Interp&, CallArgs&)>;
  std::string name;
  Fn fn;
  bool is_macro = false;
  std::string display;  // repr() when set (e.g. "<built-in method strip of str object at 0x...>")
};

// Lists and dicts nest at most this deep (Python's json and repr give up near here too); deeper
// nesting is a Limit error, so recursive algorithms over values cannot exhaust the stack.
constexpr uint32_t kMaxValueDepth = 512;
// Bound on str()/repr() text where the caller gives none.
constexpr size_t kDefaultTextLimit = size_t{64} << 20;

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Function, Object };
  using List = std::vector<Value>;

  Value();  // undefined without a message
  static Value undefined(std::string message, bool unsafe = false);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s, bool safe = false);
  static Value list(List items, bool tuple = false);
  // dict.keys() / .values() / .items(): iterable like a list, but printed as dict_keys([...]),
  // not subscriptable and not JSON serializable, as in Python.
  enum class View : uint8_t { Keys = 2, Values = 3, Items = 4 };
  static Value view(List items, View which);
  static Value dict(Dict d);
  static Value dict(std::shared_ptr<const Dict> d);
  static Value function(std::string name, Function::Fn fn, bool is_macro = false);
  static Value function(std::shared_ptr<const Function> f);
  static Value object(std::shared_ptr<Object> obj);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Bool || kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_function() const { return kind_ == Kind::Function; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_callable() const;
  bool is_safe() const { return flag_ && kind_ == Kind::String; }
  bool is_tuple() const { return flag_ == 1 && kind_ == Kind::List; }
  bool is_view() const { return flag_ >= 2 && kind_ == Kind::List; }
  // list and tuple (not views): subscriptable, sliceable, concatenable
  bool is_sequence_list() const { return kind_ == Kind::List && flag_ < 2; }
  uint32_t depth() const { return depth_; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;   // bool or int
  double as_float() const;  // bool, int or float
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const std::shared_ptr<const List>& list_ptr() const { return std::get<std::shared_ptr<const List>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  const Function& as_function() const { return *std::get<std::shared_ptr<const Function>>(data_); }
  Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  const UndefinedInfo& undefined_info() const;

  bool truthy() const;
  // Python str() / repr(). The text is bounded by `limit` bytes (a Limit error beyond), so printing a
  // list that holds the same big string a million times cannot exhaust memory.
  std::string str(size_t limit = kDefaultTextLimit) const;
  std::string repr(size_t limit = kDefaultTextLimit) const;
  void repr_into(std::string& out, int depth, size_t limit) const;
  std::string type_name() const;  // Python type name, for messages

  // Python ==; identity of objects/functions.
  friend bool operator==(const Value& a, const Value& b);

 private:
  using Data = std::variant<std::shared_ptr<const UndefinedInfo>, std::nullptr_t, bool, int64_t, double, std::string,
                            std::shared_ptr<const List>, std::shared_ptr<const Dict>, std::shared_ptr<const Function>,
                            std::shared_ptr<Object>>;
  Value(Kind kind, Data data, uint8_t flag = 0, uint32_t depth = 0)
      : kind_(kind), flag_(flag), depth_(depth), data_(std::move(data)) {}

  Kind kind_;
  uint8_t flag_ = 0;    // String: 1 Markup; List: 1 tuple, 2..4 dict views
  uint32_t depth_ = 0;  // container nesting depth (0 for scalars), bounded by kMaxValueDepth
  Data data_;
};

// Insertion-ordered dict with Python key semantics (1, 1.0 and True are one key).
class Dict {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);  // replaces in place when the key exists
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }

 private:
  static std::string key_of(const Value& key);  // throws TypeError for unhashable keys
  std::vector<std::pair<Value, Value>> items_;
  std::unordered_map<std::string, size_t> index_;
};

// Python ordering (<): numbers with numbers, str with str, lists lexicographically; else TypeError.
// Returns -1, 0 or 1. op is the operator for the error message.
int compare(const Value& a, const Value& b, const char* op);

// JSON (as parsed; object order kept with ordered_json) to Value. Limit error past kMaxValueDepth.
Value from_json(const nlohmann::ordered_json& j);
Value from_json(const nlohmann::json& j);

// Deepest [ / { nesting of JSON text (strings skipped). nlohmann's parser and destructor recurse once
// per level, so untrusted JSON must be checked with this before it is parsed.
size_t json_nesting_depth(std::string_view text);

}  // namespace inferdesk::chat
