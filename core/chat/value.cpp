#include "core/chat/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/chat/pystr.h"
#include "core/chat/work.h"

namespace inferdesk::chat {

void throw_type_error(const std::string& message) { throw EvalError(EvalErrorKind::Type, message); }

// ---------------------------------------------------------------- Object

bool Object::set_attr(const std::string&, Value) { return false; }

void Object::repr_into(std::string& out, int, size_t) const { out += "<" + std::string(type_name()) + " object>"; }

std::vector<Value> Object::drain() { return {}; }
std::optional<Value> Object::next_item() { return std::nullopt; }

Value Object::call(Interp&, CallArgs&) {
  throw_type_error("'" + std::string(type_name()) + "' object is not callable");
}

// ---------------------------------------------------------------- Value construction

namespace {
const std::shared_ptr<const UndefinedInfo>& plain_undefined() {
  static const auto info = std::make_shared<const UndefinedInfo>();  // immutable, shared by all
  return info;
}
}  // namespace

Value::Value() : kind_(Kind::Undefined), data_(plain_undefined()) {}

Value Value::undefined(std::string message, bool unsafe) {
  return Value(Kind::Undefined, std::make_shared<const UndefinedInfo>(UndefinedInfo{std::move(message), unsafe}));
}
Value Value::none() { return Value(Kind::None, nullptr); }
Value Value::boolean(bool b) { return Value(Kind::Bool, b); }
Value Value::integer(int64_t i) { return Value(Kind::Int, i); }
Value Value::number(double f) { return Value(Kind::Float, f); }
Value Value::string(std::string s, bool safe) { return Value(Kind::String, std::move(s), safe); }
namespace {
uint32_t nested_depth(uint32_t child_max) {
  if (child_max + 1 > kMaxValueDepth) {
    throw EvalError(EvalErrorKind::Limit,
                    "lists and dicts nested more than " + std::to_string(kMaxValueDepth) + " levels deep");
  }
  return child_max + 1;
}
}  // namespace

Value Value::list(List items, bool tuple) {
  uint32_t child = 0;
  for (const Value& v : items) child = std::max(child, v.depth_);
  const uint32_t depth = nested_depth(child);
  return Value(Kind::List, std::make_shared<const List>(std::move(items)), tuple, depth);
}
Value Value::view(List items, View which) {
  Value v = list(std::move(items));
  v.flag_ = static_cast<uint8_t>(which);
  return v;
}
Value Value::dict(Dict d) { return dict(std::make_shared<const Dict>(std::move(d))); }
Value Value::dict(std::shared_ptr<const Dict> d) {
  uint32_t child = 0;
  for (const auto& [k, v] : d->items()) child = std::max({child, k.depth_, v.depth_});
  const uint32_t depth = nested_depth(child);
  return Value(Kind::Dict, std::move(d), false, depth);
}
Value Value::function(std::string name, Function::Fn fn, bool is_macro) {
  return Value(Kind::Function,
               std::make_shared<const Function>(Function{std::move(name), std::move(fn), is_macro, {}}));
}
Value Value::function(std::shared_ptr<const Function> f) { return Value(Kind::Function, std::move(f)); }
Value Value::object(std::shared_ptr<Object> obj) { return Value(Kind::Object, std::move(obj)); }

bool Value::is_callable() const { return kind_ == Kind::Function || (kind_ == Kind::Object && as_object().callable()); }

int64_t Value::as_int() const {
  if (kind_ == Kind::Bool) return std::get<bool>(data_) ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::as_float() const {
  switch (kind_) {
    case Kind::Bool: return std::get<bool>(data_) ? 1.0 : 0.0;
    case Kind::Int: return static_cast<double>(std::get<int64_t>(data_));
    default: return std::get<double>(data_);
  }
}

const UndefinedInfo& Value::undefined_info() const { return *std::get<std::shared_ptr<const UndefinedInfo>>(data_); }

// ---------------------------------------------------------------- Python protocol

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return std::get<double>(data_) != 0.0;
    case Kind::String: return !as_string().empty();
    case Kind::List: return !as_list().empty();
    case Kind::Dict: return !as_dict().empty();
    case Kind::Function:
    case Kind::Object: return true;
  }
  return false;
}

std::string Value::str(size_t limit) const {
  if (kind_ == Kind::Undefined) return "";
  if (kind_ == Kind::String) return as_string();
  return repr(limit);
}

std::string Value::repr(size_t limit) const {
  std::string out;
  repr_into(out, 0, limit);
  return out;
}

namespace {
void check_text(const std::string& out, size_t limit) {
  if (out.size() > limit) {
    throw EvalError(EvalErrorKind::Limit, "text of a value exceeds " + std::to_string(limit) + " bytes");
  }
}
}  // namespace

void Value::repr_into(std::string& out, int depth, size_t limit) const {
  if (depth > static_cast<int>(kMaxValueDepth) * 2) {
    throw EvalError(EvalErrorKind::Limit, "repr() nested too deeply (an object that contains itself?)");
  }
  switch (kind_) {
    case Kind::Undefined: out += "Undefined"; break;
    case Kind::None: out += "None"; break;
    case Kind::Bool: out += as_bool() ? "True" : "False"; break;
    case Kind::Int: out += std::to_string(as_int()); break;
    case Kind::Float: out += py::float_repr(std::get<double>(data_)); break;
    case Kind::String:
      if (as_string().size() > limit) check_text(as_string(), limit);
      out += is_safe() ? "Markup(" + py::str_repr(as_string()) + ")" : py::str_repr(as_string());
      break;
    case Kind::List: {
      static constexpr const char* kOpen[] = {"[", "(", "dict_keys([", "dict_values([", "dict_items(["};
      const List& items = as_list();
      out += kOpen[flag_ < 5 ? flag_ : 0];
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        items[i].repr_into(out, depth + 1, limit);
        check_text(out, limit);
      }
      if (is_tuple() && items.size() == 1) out += ",";
      out += is_tuple() ? ")" : (is_view() ? "])" : "]");
      break;
    }
    case Kind::Dict: {
      out += "{";
      bool first = true;
      for (const auto& [k, v] : as_dict().items()) {
        if (!first) out += ", ";
        first = false;
        k.repr_into(out, depth + 1, limit);
        out += ": ";
        v.repr_into(out, depth + 1, limit);
        check_text(out, limit);
      }
      out += "}";
      break;
    }
    case Kind::Function: {
      const Function& f = as_function();
      out += !f.display.empty() ? f.display : (f.is_macro ? "<Macro '" + f.name + "'>" : "<function " + f.name + ">");
      break;
    }
    case Kind::Object: as_object().repr_into(out, depth + 1, limit); break;
  }
  check_text(out, limit);
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return is_safe() ? "Markup" : "str";
    case Kind::List: {
      static constexpr const char* kNames[] = {"list", "tuple", "dict_keys", "dict_values", "dict_items"};
      return kNames[flag_ < 5 ? flag_ : 0];
    }
    case Kind::Dict: return "dict";
    case Kind::Function: return as_function().is_macro ? "Macro" : "function";
    case Kind::Object: return std::string(as_object().type_name());
  }
  return "object";
}

bool operator==(const Value& a, const Value& b) {
  using K = Value::Kind;
  WorkMeter::charge(1);  // lists sharing their halves compare in exponential time otherwise
  if (a.is_number() && b.is_number()) {
    if (a.kind() != K::Float && b.kind() != K::Float) return a.as_int() == b.as_int();
    return a.as_float() == b.as_float();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::String: WorkMeter::charge_bytes(a.as_string().size()); return a.as_string() == b.as_string();
    case K::List: {
      if (a.flag_ != b.flag_ || a.flag_ == static_cast<uint8_t>(Value::View::Values)) return false;
      const auto& x = a.as_list();
      const auto& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!(x[i] == y[i])) return false;
      }
      return true;
    }
    case K::Dict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* other = y.find(k);
        if (!other || !(*other == v)) return false;
      }
      return true;
    }
    case K::Function: return &a.as_function() == &b.as_function();
    case K::Object: return &a.as_object() == &b.as_object();
    default: return false;
  }
}

int compare(const Value& a, const Value& b, const char* op) {
  using K = Value::Kind;
  WorkMeter::charge(1);  // sorting costs n log n of these
  if (a.is_number() && b.is_number()) {
    if (a.kind() != K::Float && b.kind() != K::Float) {
      const int64_t x = a.as_int(), y = b.as_int();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y)) return 2;  // every ordering test is false
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_sequence_list() && b.is_sequence_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!(x[i] == y[i])) return compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw_type_error(std::string("'") + op + "' not supported between instances of '" + a.type_name() + "' and '" +
                   b.type_name() + "'");
}

// ---------------------------------------------------------------- Dict

std::string Dict::key_of(const Value& key) {
  using K = Value::Kind;
  switch (key.kind()) {
    case K::None: return "N";
    case K::Bool:
    case K::Int: return "n" + std::to_string(key.as_int());
    case K::Float: {
      const double f = key.as_float();
      if (std::floor(f) == f && std::fabs(f) < 9.2e18) return "n" + std::to_string(static_cast<int64_t>(f));
      return "f" + py::float_repr(f);
    }
    case K::String: return "s" + key.as_string();
    case K::List: {
      if (!key.is_tuple()) throw_type_error("unhashable type: 'list'");
      std::string out = "t(";
      for (const Value& v : key.as_list()) out += key_of(v) + "\x1f";
      return out + ")";
    }
    case K::Dict: throw_type_error("unhashable type: 'dict'");
    case K::Undefined: return "u";
    case K::Function: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "p%p", static_cast<const void*>(&key.as_function()));
      return buf;
    }
    case K::Object: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "p%p", static_cast<const void*>(&key.as_object()));
      return buf;
    }
  }
  return "?";
}

namespace {
constexpr size_t kIndexThreshold = 12;  // below this, a linear scan beats hashing
}

const Value* Dict::find(std::string_view key) const {
  if (items_.size() < kIndexThreshold) {
    for (const auto& [k, v] : items_) {
      if (k.is_string() && k.as_string() == key) return &v;
    }
    return nullptr;
  }
  std::string canon = "s";
  canon.append(key);
  const auto it = index_.find(canon);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  const std::string canon = key_of(key);
  if (items_.size() < kIndexThreshold) {
    for (const auto& [k, v] : items_) {
      if (!k.is_string() && key_of(k) == canon) return &v;
    }
    return nullptr;
  }
  const auto it = index_.find(canon);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

void Dict::set(Value key, Value value) {
  std::string canon = key_of(key);
  if (items_.size() < kIndexThreshold) {
    for (auto& [k, v] : items_) {
      if (key_of(k) == canon) {
        v = std::move(value);
        return;
      }
    }
    items_.emplace_back(std::move(key), std::move(value));
    if (items_.size() == kIndexThreshold) {
      for (size_t i = 0; i < items_.size(); ++i) index_.emplace(key_of(items_[i].first), i);
    }
    return;
  }
  const auto it = index_.find(canon);
  if (it != index_.end()) {
    items_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(std::move(canon), items_.size());
  items_.emplace_back(std::move(key), std::move(value));
}

// ---------------------------------------------------------------- JSON

namespace {
template <typename Json>
Value convert(const Json& j, uint32_t depth) {
  if (depth > kMaxValueDepth) {
    throw EvalError(EvalErrorKind::Limit,
                    "the context nests lists and objects more than " + std::to_string(kMaxValueDepth) + " levels deep");
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      Value::List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(convert(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(Value::string(it.key()), convert(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary / discarded: not produced by the JSON parser
  }
}
}  // namespace

Value from_json(const nlohmann::ordered_json& j) { return convert(j, 0); }
Value from_json(const nlohmann::json& j) { return convert(j, 0); }

size_t json_nesting_depth(std::string_view text) {
  size_t depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace inferdesk::chat
