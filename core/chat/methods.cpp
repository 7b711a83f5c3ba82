// Attribute and item lookup, str / dict / list methods, iteration and "in" — Python's behaviour as
// jinja2's ImmutableSandboxedEnvironment exposes it.
#include <algorithm>

#include "core/chat/builtins.h"
#include "core/chat/interp.h"
#include "core/chat/pystr.h"
#include "core/chat/work.h"

namespace inferdesk::chat {

// ---------------------------------------------------------------- ArgReader

ArgReader::ArgReader(std::string_view function, const CallArgs& args, std::initializer_list<const char*> params)
    : function_(function), names_(params), slots_(params.size(), nullptr) {
  if (args.args.size() > names_.size()) {
    throw_type_error(function_ + "() takes at most " + std::to_string(names_.size()) + " argument(s) (" +
                     std::to_string(args.args.size()) + " given)");
  }
  for (size_t i = 0; i < args.args.size(); ++i) slots_[i] = &args.args[i];
  for (const auto& [name, value] : args.kwargs) {
    size_t i = 0;
    while (i < names_.size() && name != names_[i]) ++i;
    if (i == names_.size()) throw_type_error(function_ + "() got an unexpected keyword argument '" + name + "'");
    if (slots_[i]) throw_type_error(function_ + "() got multiple values for argument '" + name + "'");
    slots_[i] = &value;
  }
}

Value ArgReader::value_or(size_t index, Value fallback) const { return slots_[index] ? *slots_[index] : fallback; }

bool ArgReader::bool_or(size_t index, bool fallback) const {
  return slots_[index] ? slots_[index]->truthy() : fallback;
}

int64_t ArgReader::int_or(size_t index, int64_t fallback) const {
  if (!slots_[index] || slots_[index]->is_none()) return fallback;
  if (!slots_[index]->is_int() && !slots_[index]->is_bool()) {
    throw_type_error(function_ + "(): argument '" + names_[index] + "' must be an integer, not " +
                     slots_[index]->type_name());
  }
  return slots_[index]->as_int();
}

std::optional<std::string> ArgReader::str_opt(size_t index) const {
  if (!slots_[index] || slots_[index]->is_none()) return std::nullopt;
  if (!slots_[index]->is_string()) {
    throw_type_error(function_ + "(): argument '" + names_[index] + "' must be str, not " + slots_[index]->type_name());
  }
  return slots_[index]->as_string();
}

std::string ArgReader::str_or(size_t index, std::string fallback) const {
  auto s = str_opt(index);
  return s ? *s : fallback;
}

// ---------------------------------------------------------------- iteration / membership

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List: WorkMeter::charge_items(v.as_list()); return v.as_list();
    case Value::Kind::Dict: {
      WorkMeter::charge(v.as_dict().size());
      std::vector<Value> keys;
      keys.reserve(v.as_dict().size());
      for (const auto& kv : v.as_dict().items()) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      const std::string& s = v.as_string();
      WorkMeter::check_list_size(s.size());  // at most one item per byte
      WorkMeter::charge(s.size());           // one small string per character
      for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        py::next_cp(s, pos);
        chars.push_back(Value::string(s.substr(start, pos - start)));  // iterating Markup gives str
      }
      return chars;
    }
    case Value::Kind::Undefined: return {};
    case Value::Kind::Object:
      if (v.as_object().is_iterator()) return v.as_object().drain();
      [[fallthrough]];
    default: throw_type_error("'" + v.type_name() + "' object is not iterable");
  }
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is_string()) {
        throw_type_error("'in <string>' requires string as left operand, not " + item.type_name());
      }
      return py::find_sub(container.as_string(), item.as_string()) != std::string::npos;
    case Value::Kind::List:
      WorkMeter::charge(container.as_list().size());
      return std::any_of(container.as_list().begin(), container.as_list().end(),
                         [&](const Value& v) { return v == item; });
    case Value::Kind::Dict: return container.as_dict().find(item) != nullptr;
    case Value::Kind::Undefined: return false;
    case Value::Kind::Object:
      if (container.as_object().is_iterator()) {
        for (const Value& v : container.as_object().drain()) {
          if (v == item) return true;
        }
        return false;
      }
      [[fallthrough]];
    default: throw_type_error("argument of type '" + container.type_name() + "' is not iterable");
  }
}

// ---------------------------------------------------------------- attribute lookup

namespace {

constexpr const char* kStrMethods[] = {"capitalize", "casefold",  "center",       "count",        "endswith",
                                       "find",       "format",    "index",        "isalnum",      "isalpha",
                                       "isdecimal",  "isdigit",   "islower",      "isnumeric",    "isspace",
                                       "istitle",    "isupper",   "join",         "ljust",        "lower",
                                       "lstrip",     "partition", "removeprefix", "removesuffix", "replace",
                                       "rfind",      "rindex",    "rjust",        "rpartition",   "rsplit",
                                       "rstrip",     "split",     "splitlines",   "startswith",   "strip",
                                       "swapcase",   "title",     "upper",        "zfill"};
constexpr const char* kDictMethods[] = {"copy", "get", "items", "keys", "values"};
constexpr const char* kDictUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr const char* kListMethods[] = {"copy", "count", "index"};
constexpr const char* kListUnsafe[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};

template <size_t N>
bool in(const char* const (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

Value unsafe(const Value& obj, std::string_view name) {
  return Value::undefined("access to attribute '" + std::string(name) + "' of '" + obj.type_name() +
                              "' object is unsafe.",
                          true);
}

Value no_attribute(const Value& obj, std::string_view name) {
  const std::string what = obj.is_none() ? "None" : obj.type_name() + " object";
  return Value::undefined("'" + what + "' has no attribute '" + std::string(name) + "'");
}

Value bound_method(const Value& obj, std::string_view name) {
  std::string method(name);
  auto f = std::make_shared<Function>();
  f->name = method;
  // Python prints an address here; the shape is kept for templates that measure the text.
  f->display = "<built-in method " + method + " of " + obj.type_name() + " object at 0x7f0000000000>";
  f->fn = [obj, method](Interp& interp, CallArgs& args) {
    Value result;
    call_method(interp, obj, method, args, &result);
    return result;
  };
  return Value::function(std::move(f));
}

bool is_dunder(std::string_view name) {
  return name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";
}

}  // namespace

Value get_attribute(const Value& obj, std::string_view name) {
  if (obj.is_object()) return obj.as_object().get_attr(name);
  if (is_dunder(name)) return unsafe(obj, name);
  switch (obj.kind()) {
    case Value::Kind::String:
      if (in(kStrMethods, name)) return bound_method(obj, name);
      break;
    case Value::Kind::Dict:
      if (in(kDictMethods, name)) return bound_method(obj, name);
      if (in(kDictUnsafe, name)) return unsafe(obj, name);
      if (const Value* v = obj.as_dict().find(name)) return *v;
      break;
    case Value::Kind::List:
      if (obj.is_view()) break;
      if (in(kListMethods, name)) return bound_method(obj, name);
      if (in(kListUnsafe, name)) return unsafe(obj, name);
      break;
    default: break;
  }
  return no_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  auto missing = [&]() {
    if (key.is_string()) return get_attribute(obj, key.as_string());
    const std::string what = obj.is_none() ? "None" : obj.type_name() + " object";
    return Value::undefined("'" + what + "' has no element " + key.repr());
  };
  switch (obj.kind()) {
    case Value::Kind::Dict: {
      try {
        if (const Value* v = obj.as_dict().find(key)) return *v;
      } catch (const EvalError&) {  // unhashable key: TypeError, caught by the sandbox
      }
      return missing();
    }
    case Value::Kind::List:
      if ((key.is_int() || key.is_bool()) && obj.is_sequence_list()) {
        if (auto i = py::norm_index(key.as_int(), obj.as_list().size())) return obj.as_list()[*i];
      }
      return missing();
    case Value::Kind::String:
      if (key.is_int() || key.is_bool()) {
        const std::string& s = obj.as_string();
        if (py::is_ascii(s)) {
          if (auto i = py::norm_index(key.as_int(), s.size()))
            return Value::string(std::string(1, s[*i]), obj.is_safe());
        } else {
          const std::u32string cps = py::decode(s);
          if (auto i = py::norm_index(key.as_int(), cps.size())) {
            return Value::string(py::encode(cps.substr(*i, 1)), obj.is_safe());
          }
        }
      }
      return missing();
    default: return missing();
  }
}

// ---------------------------------------------------------------- methods

namespace {

Value str_list(std::vector<std::string> parts, bool safe) {
  Value::List out;
  out.reserve(parts.size());
  for (auto& p : parts) out.push_back(Value::string(std::move(p), safe));
  return Value::list(std::move(out));
}

// startswith / endswith take a str or a tuple of str.
bool affix_test(const Value& self, const ArgReader& r, bool prefix) {
  const Value* arg = r.get(0);
  if (!arg) throw_type_error(r.function() + "() takes at least 1 argument (0 given)");
  std::vector<std::string> candidates;
  if (arg->is_string()) {
    candidates.push_back(arg->as_string());
  } else if (arg->is_tuple()) {
    for (const Value& v : arg->as_list()) {
      if (!v.is_string())
        throw_type_error("tuple for " + r.function() + " must only contain str, not " + v.type_name());
      candidates.push_back(v.as_string());
    }
  } else {
    throw_type_error(r.function() + " first arg must be str or a tuple of str, not " + arg->type_name());
  }
  std::string s = self.as_string();
  if (r.has(1) || r.has(2)) {  // start / end in code points
    const std::u32string cps = py::decode(s);
    const int64_t n = static_cast<int64_t>(cps.size());
    auto clamp = [n](int64_t v) { return v < 0 ? std::max<int64_t>(0, v + n) : std::min(v, n); };
    const int64_t b = clamp(r.int_or(1, 0)), e = clamp(r.int_or(2, n));
    s = b < e ? py::encode(std::u32string_view(cps).substr(b, e - b)) : std::string();
  }
  for (const std::string& c : candidates) {
    if (c.size() > s.size()) continue;
    if (prefix ? s.compare(0, c.size(), c) == 0 : s.compare(s.size() - c.size(), c.size(), c) == 0) return true;
  }
  return false;
}

Value str_join(Interp& interp, const Value& sep, const ArgReader& r) {
  const Value* arg = r.get(0);
  if (!arg) throw_type_error("join() takes exactly one argument (0 given)");
  std::string out;
  size_t i = 0;
  for (const Value& v : iterate(*arg)) {
    if (!v.is_string()) {
      throw_type_error("sequence item " + std::to_string(i) + ": expected str instance, " + v.type_name() + " found");
    }
    if (i++) out += sep.as_string();
    out += v.as_string();
    interp.check_size(out.size());
  }
  return Value::string(std::move(out), sep.is_safe());
}

Value partition(const std::string& s, const std::string& sep, bool from_right) {
  if (sep.empty()) throw EvalError(EvalErrorKind::Value, "empty separator");
  const size_t hit = from_right ? py::rfind_sub(s, sep) : py::find_sub(s, sep);
  Value::List parts;
  if (hit == std::string::npos) {
    parts = from_right ? Value::List{Value::string(""), Value::string(""), Value::string(s)}
                       : Value::List{Value::string(s), Value::string(""), Value::string("")};
  } else {
    parts = {Value::string(s.substr(0, hit)), Value::string(sep), Value::string(s.substr(hit + sep.size()))};
  }
  return Value::list(std::move(parts), true);
}

}  // namespace

size_t replaced_size(const std::string& s, const std::string& old_s, const std::string& new_s, int64_t count) {
  int64_t n = py::count(s, old_s);
  if (count >= 0 && count < n) n = count;
  if (new_s.size() <= old_s.size()) return s.size();
  const size_t grow = new_s.size() - old_s.size();
  if (n > 0 && grow > (SIZE_MAX - s.size()) / static_cast<size_t>(n)) return SIZE_MAX;
  return s.size() + grow * static_cast<size_t>(n);
}

namespace {

bool str_strip_split(Interp& interp, const Value& self, std::string_view name, CallArgs& args, Value* out) {
  const std::string& s = self.as_string();
  const bool safe = self.is_safe();
  const std::string fn(name);
  auto str = [&](std::string v) { return Value::string(std::move(v), safe); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgReader r(fn, args, {"chars"});
    *out = str(py::strip(s, r.str_opt(0), name != "rstrip", name != "lstrip"));
  } else if (name == "split" || name == "rsplit") {
    ArgReader r(fn, args, {"sep", "maxsplit"});
    // Splits at most `cap` times, so a string of separators cannot become millions of strings
    // before the list size check; results under the cap are those of an unlimited split.
    const size_t cap = interp.max_text_bytes() / sizeof(Value);
    int64_t maxsplit = r.int_or(1, -1);
    const bool capped = maxsplit < 0 || static_cast<uint64_t>(maxsplit) >= cap;
    if (capped) maxsplit = static_cast<int64_t>(cap);
    try {
      auto parts = name == "split" ? py::split(s, r.str_opt(0), maxsplit) : py::rsplit(s, r.str_opt(0), maxsplit);
      if (capped) WorkMeter::check_list_size(parts.size());
      *out = str_list(std::move(parts), safe);
    } catch (const std::invalid_argument&) {
      throw EvalError(EvalErrorKind::Value, "empty separator");
    }
  } else if (name == "splitlines") {
    ArgReader r(fn, args, {"keepends"});
    auto lines = py::splitlines(s, r.bool_or(0, false), interp.max_text_bytes() / sizeof(Value));
    WorkMeter::check_list_size(lines.size());
    *out = str_list(std::move(lines), safe);
  } else if (name == "partition" || name == "rpartition") {
    ArgReader r(fn, args, {"sep"});
    if (!r.has(0)) throw_type_error(fn + "() takes exactly one argument (0 given)");
    *out = partition(s, *r.str_opt(0), name == "rpartition");
  } else {
    return false;
  }
  return true;
}

bool str_case(Interp& interp, const Value& self, std::string_view name, CallArgs& args, Value* out) {
  const std::string& s = self.as_string();
  const bool safe = self.is_safe();
  const std::string fn(name);
  auto str = [&](std::string v) { return Value::string(std::move(v), safe); };
  if (name == "upper") {
    ArgReader r(fn, args, {});
    *out = str(py::upper(s));
  } else if (name == "lower" || name == "casefold") {
    ArgReader r(fn, args, {});
    *out = str(py::lower(s));
  } else if (name == "title") {
    ArgReader r(fn, args, {});
    *out = str(py::title(s));
  } else if (name == "capitalize") {
    ArgReader r(fn, args, {});
    *out = str(py::capitalize(s));
  } else if (name == "swapcase") {
    ArgReader r(fn, args, {});
    *out = str(py::swapcase(s));
  } else {
    return false;
  }
  return true;
}

bool str_search(Interp& interp, const Value& self, std::string_view name, CallArgs& args, Value* out) {
  const std::string& s = self.as_string();
  const std::string fn(name);
  if (name == "startswith" || name == "endswith") {
    ArgReader r(fn, args, {"prefix", "start", "end"});
    *out = Value::boolean(affix_test(self, r, name == "startswith"));
  } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    ArgReader r(fn, args, {"sub"});
    if (!r.has(0)) throw_type_error(fn + "() takes at least 1 argument (0 given)");
    const std::string sub = *r.str_opt(0);
    const int64_t at = (name == "find" || name == "index") ? py::find(s, sub) : py::rfind(s, sub);
    if (at < 0 && (name == "index" || name == "rindex")) throw EvalError(EvalErrorKind::Value, "substring not found");
    *out = Value::integer(at);
  } else if (name == "count") {
    ArgReader r(fn, args, {"sub"});
    if (!r.has(0)) throw_type_error("count() takes at least 1 argument (0 given)");
    *out = Value::integer(py::count(s, *r.str_opt(0)));
  } else if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") {
    *out = Value::boolean(py::is_digit_str(s));
  } else if (name == "isalpha") {
    *out = Value::boolean(py::is_alpha_str(s));
  } else if (name == "isalnum") {
    *out = Value::boolean(py::is_alnum_str(s));
  } else if (name == "isspace") {
    *out = Value::boolean(py::is_space_str(s));
  } else if (name == "isupper") {
    *out = Value::boolean(py::is_upper_str(s));
  } else if (name == "islower") {
    *out = Value::boolean(py::is_lower_str(s));
  } else if (name == "istitle") {
    *out = Value::boolean(py::title(s) == s && (py::is_upper_str(s) || py::is_lower_str(s) || s != py::lower(s)));
  } else {
    return false;
  }
  return true;
}

bool str_misc(Interp& interp, const Value& self, std::string_view name, CallArgs& args, Value* out) {
  const std::string& s = self.as_string();
  const bool safe = self.is_safe();
  const std::string fn(name);
  auto str = [&](std::string v) { return Value::string(std::move(v), safe); };
  if (name == "replace") {
    ArgReader r(fn, args, {"old", "new", "count"});
    if (!r.has(0) || !r.has(1)) throw_type_error("replace() takes at least 2 arguments");
    const std::string old_s = *r.str_opt(0), new_s = *r.str_opt(1);
    interp.check_size(replaced_size(s, old_s, new_s, r.int_or(2, -1)));
    std::string result = py::replace(s, old_s, new_s, r.int_or(2, -1));
    *out = str(std::move(result));
  } else if (name == "join") {
    *out = str_join(interp, self, ArgReader(fn, args, {"iterable"}));
  } else if (name == "format") {
    *out = str(str_format(interp, s, args));
  } else if (name == "center" || name == "ljust" || name == "rjust") {
    ArgReader r(fn, args, {"width", "fillchar"});
    const std::string fill = r.str_or(1, " ");
    if (py::cp_length(fill) != 1) throw_type_error("The fill character must be exactly one character long");
    const int64_t width = r.int_or(0, 0);
    interp.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
    const char align = name == "center" ? 'c' : (name == "ljust" ? '<' : '>');
    *out = str(py::pad(s, width, py::decode(fill)[0], align));
  } else if (name == "zfill") {
    ArgReader r(fn, args, {"width"});
    const int64_t width = r.int_or(0, 0);
    interp.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
    const int64_t len = static_cast<int64_t>(py::cp_length(s));
    std::string result = s;
    if (width > len) {
      const size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
      result.insert(sign, std::string(static_cast<size_t>(width - len), '0'));
    }
    *out = str(std::move(result));
  } else if (name == "removeprefix" || name == "removesuffix") {
    ArgReader r(fn, args, {"affix"});
    const std::string a = r.str_or(0, "");
    std::string result = s;
    if (name == "removeprefix" && s.compare(0, a.size(), a) == 0) result = s.substr(a.size());
    if (name == "removesuffix" && !a.empty() && s.size() >= a.size() &&
        s.compare(s.size() - a.size(), a.size(), a) == 0) {
      result = s.substr(0, s.size() - a.size());
    }
    *out = str(std::move(result));
  } else {
    return false;
  }
  return true;
}

bool str_method(Interp& interp, const Value& self, std::string_view name, CallArgs& args, Value* out) {
  return str_strip_split(interp, self, name, args, out) || str_case(interp, self, name, args, out) ||
         str_search(interp, self, name, args, out) || str_misc(interp, self, name, args, out);
}

bool dict_method(const Value& self, std::string_view name, CallArgs& args, Value* out) {
  const Dict& d = self.as_dict();
  const std::string fn(name);
  if (name == "get") {
    ArgReader r(fn, args, {"key", "default"});
    if (!r.has(0)) throw_type_error("get expected at least 1 argument, got 0");
    const Value* v = d.find(*r.get(0));
    *out = v ? *v : r.value_or(1, Value::none());
  } else if (name == "items") {
    ArgReader r(fn, args, {});
    Value::List items;
    items.reserve(d.size());
    for (const auto& [k, v] : d.items()) items.push_back(Value::list({k, v}, true));
    *out = Value::view(std::move(items), Value::View::Items);
  } else if (name == "keys" || name == "values") {
    ArgReader r(fn, args, {});
    Value::List items;
    items.reserve(d.size());
    for (const auto& [k, v] : d.items()) items.push_back(name == "keys" ? k : v);
    *out = Value::view(std::move(items), name == "keys" ? Value::View::Keys : Value::View::Values);
  } else if (name == "copy") {
    ArgReader r(fn, args, {});
    *out = self;
  } else {
    return false;
  }
  return true;
}

bool list_method(const Value& self, std::string_view name, CallArgs& args, Value* out) {
  const auto& items = self.as_list();
  const std::string fn(name);
  if (name == "index" || name == "count") {
    ArgReader r(fn, args, {"value"});
    if (!r.has(0)) throw_type_error(fn + "() takes exactly one argument (0 given)");
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!(items[i] == *r.get(0))) continue;
      if (name == "index") {
        *out = Value::integer(static_cast<int64_t>(i));
        return true;
      }
      ++n;
    }
    if (name == "index") throw EvalError(EvalErrorKind::Value, r.get(0)->repr() + " is not in list");
    *out = Value::integer(n);
  } else if (name == "copy") {
    ArgReader r(fn, args, {});
    *out = self;
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool call_method(Interp& interp, const Value& obj, std::string_view name, CallArgs& args, Value* result) {
  switch (obj.kind()) {
    case Value::Kind::String: return in(kStrMethods, name) && str_method(interp, obj, name, args, result);
    case Value::Kind::Dict:
      if (in(kDictUnsafe, name)) fail_undefined(unsafe(obj, name));
      return dict_method(obj, name, args, result);
    case Value::Kind::List:
      if (obj.is_view()) return false;
      if (in(kListUnsafe, name)) fail_undefined(unsafe(obj, name));
      return list_method(obj, name, args, result);
    default: return false;
  }
}

}  // namespace inferdesk::chat
