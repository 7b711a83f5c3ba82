// jinja2's built-in filters (and transformers' tojson), with jinja2 3.1's semantics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/chat/builtins.h"
#include "core/chat/interp.h"
#include "core/chat/pystr.h"

namespace inferdesk::chat {

namespace {

using Args = CallArgs;

// jinja2's soft_str: str(value), keeping Markup.
Value soft_str(const Value& v) { return v.is_string() ? v : Value::string(v.str()); }

Value str_result(const Value& from, std::string s) { return Value::string(std::move(s), from.is_safe()); }

int64_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::String: return static_cast<int64_t>(py::cp_length(v.as_string()));
    case Value::Kind::List: return static_cast<int64_t>(v.as_list().size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.as_dict().size());
    case Value::Kind::Undefined: return 0;
    default: throw_type_error("object of type '" + v.type_name() + "' has no len()");
  }
}

// make_attrgetter: "a.b.0" looked up with getitem, part by part.
Value attr_path(const Value& item, const Value& attribute, const Value* fallback) {
  std::vector<Value> parts;
  if (attribute.is_string()) {
    for (const std::string& p : py::split(attribute.as_string(), std::string("."), -1)) {
      const bool digits = !p.empty() && p.find_first_not_of("0123456789") == std::string::npos;
      parts.push_back(digits ? Value::integer(std::strtoll(p.c_str(), nullptr, 10)) : Value::string(p));
    }
  } else {
    parts.push_back(attribute);
  }
  Value cur = item;
  for (const Value& p : parts) {
    if (cur.is_undefined()) fail_undefined(cur);
    cur = get_item(cur, p);
    if (fallback && cur.is_undefined()) cur = *fallback;
  }
  return cur;
}

Value lower_if_str(const Value& v, bool case_sensitive) {
  return (!case_sensitive && v.is_string()) ? Value::string(py::lower(v.as_string())) : v;
}

Value f_abs(Interp&, const Value& v, Args& a) {
  ArgReader r("abs", a, {});
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) throw EvalError(EvalErrorKind::Overflow, "integer result too large");
    return Value::integer(std::llabs(v.as_int()));
  }
  if (v.is_undefined()) fail_undefined(v);
  throw_type_error("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_attr(Interp&, const Value& v, Args& a) {
  ArgReader r("attr", a, {"name"});
  const std::string name = r.value_or(0, Value::string("")).str();
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_dict()) {  // attributes only, not keys
    static constexpr const char* kMethods[] = {"copy", "get", "items", "keys", "values"};
    if (std::find(std::begin(kMethods), std::end(kMethods), name) == std::end(kMethods)) {
      return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
  }
  return get_attribute(v, name);
}

Value f_batch(Interp&, const Value& v, Args& a) {
  ArgReader r("batch", a, {"linecount", "fill_with"});
  const int64_t n = r.int_or(0, 0);
  if (n <= 0) throw EvalError(EvalErrorKind::Value, "batch size must be positive");
  std::vector<Value> rows;
  Value::List row;
  for (Value& item : iterate(v)) {
    row.push_back(std::move(item));
    if (static_cast<int64_t>(row.size()) == n) {
      rows.push_back(Value::list(std::move(row)));
      row.clear();
    }
  }
  if (!row.empty()) {
    if (r.has(1) && !r.get(1)->is_none()) {
      while (static_cast<int64_t>(row.size()) < n) row.push_back(*r.get(1));
    }
    rows.push_back(Value::list(std::move(row)));
  }
  return make_iterator("generator:do_batch", std::move(rows));
}

Value f_capitalize(Interp&, const Value& v, Args& a) {
  ArgReader r("capitalize", a, {});
  const Value s = soft_str(v);
  return str_result(s, py::capitalize(s.as_string()));
}

Value f_center(Interp& in, const Value& v, Args& a) {
  ArgReader r("center", a, {"width"});
  const int64_t width = r.int_or(0, 80);
  in.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
  const Value s = soft_str(v);
  return str_result(s, py::pad(s.as_string(), width, ' ', 'c'));
}

Value f_length(Interp&, const Value& v, Args& a) {
  ArgReader r("length", a, {});
  return Value::integer(py_len(v));
}

Value f_default(Interp&, const Value& v, Args& a) {
  ArgReader r("default", a, {"default_value", "boolean"});
  if (v.is_undefined() || (r.bool_or(1, false) && !v.truthy())) return r.value_or(0, Value::string(""));
  return v;
}

Value f_dictsort(Interp&, const Value& v, Args& a) {
  ArgReader r("dictsort", a, {"case_sensitive", "by", "reverse"});
  const bool cs = r.bool_or(0, false);
  const std::string by = r.str_or(1, "key");
  if (by != "key" && by != "value")
    throw EvalError(EvalErrorKind::Value, "You can only sort by either \"key\" or \"value\"");
  const bool reverse = r.bool_or(2, false);
  if (!v.is_dict()) throw_type_error("'" + v.type_name() + "' object has no attribute 'items'");
  std::vector<std::pair<Value, Value>> items = v.as_dict().items();
  const size_t pos = by == "key" ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    const Value kx = lower_if_str(pos ? x.second : x.first, cs);
    const Value ky = lower_if_str(pos ? y.second : y.first, cs);
    return reverse ? compare(ky, kx, "<") < 0 : compare(kx, ky, "<") < 0;
  });
  Value::List out;
  for (auto& [k, val] : items) out.push_back(Value::list({k, val}, true));
  return Value::list(std::move(out));
}

Value f_escape(Interp&, const Value& v, Args& a) {
  ArgReader r("escape", a, {});
  if (v.is_safe()) return v;
  return Value::string(py::html_escape(v.str()), true);
}

Value f_forceescape(Interp&, const Value& v, Args& a) {
  ArgReader r("forceescape", a, {});
  return Value::string(py::html_escape(v.str()), true);
}

Value f_first(Interp&, const Value& v, Args& a) {
  ArgReader r("first", a, {});
  if (v.is_object() && v.as_object().is_iterator()) {
    if (auto item = v.as_object().next_item()) return *item;
  } else {
    std::vector<Value> items = iterate(v);
    if (!items.empty()) return items.front();
  }
  return Value::undefined("No first item, sequence was empty.");
}

Value f_last(Interp&, const Value& v, Args& a) {
  ArgReader r("last", a, {});
  if (v.is_object() && v.as_object().is_iterator())
    throw_type_error("'" + v.type_name() + "' object is not reversible");
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

std::optional<double> parse_float(std::string s) {
  s = py::strip(s, std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return std::nullopt;
  const std::string low = py::lower(s);
  const std::string body = (low[0] == '+' || low[0] == '-') ? low.substr(1) : low;
  const double sign = low[0] == '-' ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity") return sign * INFINITY;
  if (body == "nan") return NAN;
  if (body.find_first_not_of("0123456789.e+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

Value f_float(Interp&, const Value& v, Args& a) {
  ArgReader r("float", a, {"default"});
  if (v.is_undefined()) fail_undefined(v);  // float(Undefined) raises
  if (v.is_number()) return Value::number(v.as_float());
  if (v.is_string()) {
    if (auto d = parse_float(v.as_string())) return Value::number(*d);
  }
  return r.value_or(0, Value::number(0.0));
}

std::optional<int64_t> parse_int(const std::string& text, int64_t base) {
  std::string s = py::strip(text, std::nullopt, true, true);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.erase(0, 1);
  }
  if (s.size() > 2 && s[0] == '0') {
    const char p = static_cast<char>(s[1] | 0x20);
    const int64_t b = p == 'x' ? 16 : (p == 'o' ? 8 : (p == 'b' ? 2 : 0));
    if (b && (base == b || base == 0)) {
      s.erase(0, 2);
      base = b;
    }
  }
  if (base == 0) base = 10;
  if (s.empty() || s.front() == '_' || s.back() == '_' || s.find("__") != std::string::npos) return std::nullopt;
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(s.c_str(), &end, static_cast<int>(base));
  if (end != s.c_str() + s.size() || errno == ERANGE || s.find_first_of("+- ") != std::string::npos) {
    return std::nullopt;
  }
  return neg ? -x : x;
}

Value f_int(Interp&, const Value& v, Args& a) {
  ArgReader r("int", a, {"default", "base"});
  const Value fallback = r.value_or(0, Value::integer(0));
  if (v.is_undefined()) fail_undefined(v);  // int(Undefined) raises
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.is_float()) {
    const double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(std::trunc(d)));
  }
  if (v.is_string()) {
    if (auto i = parse_int(v.as_string(), r.int_or(1, 10))) return Value::integer(*i);
    if (auto d = parse_float(v.as_string())) {
      if (std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value::integer(static_cast<int64_t>(std::trunc(*d)));
    }
  }
  return fallback;
}

Value f_format(Interp&, const Value& v, Args& a) {
  if (!a.args.empty() && !a.kwargs.empty()) {
    throw EvalError(EvalErrorKind::Value, "can't handle positional and keyword arguments at the same time");
  }
  const Value s = soft_str(v);
  if (!a.kwargs.empty()) {
    Dict d;
    for (const auto& [k, val] : a.kwargs) d.set(Value::string(k), val);
    return str_result(s, percent_format(s.as_string(), Value::dict(std::move(d))));
  }
  return str_result(s, percent_format(s.as_string(), Value::list(a.args, true)));
}

Value f_indent(Interp& in, const Value& v, Args& a) {
  ArgReader r("indent", a, {"width", "first", "blank"});
  std::string indention;
  const Value width = r.value_or(0, Value::integer(4));
  if (width.is_string()) {
    indention = width.as_string();
  } else {
    if (!width.is_int() && !width.is_bool())
      throw_type_error("can't multiply sequence by non-int of type '" + width.type_name() + "'");
    in.check_size(static_cast<size_t>(std::max<int64_t>(width.as_int(), 0)));
    indention.assign(static_cast<size_t>(std::max<int64_t>(width.as_int(), 0)), ' ');
  }
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_string()) {  // jinja2 does `s += "\n"` first, which fails (or misbehaves) for anything but str
    throw_type_error("indent expects a string, got '" + v.type_name() + "'");
  }
  const Value& s = v;
  std::vector<std::string> lines = py::splitlines(s.as_string() + "\n", false);
  if (!lines.empty() && indention.size() > 0 && lines.size() > SIZE_MAX / indention.size()) in.check_size(SIZE_MAX);
  in.check_size(s.as_string().size() + lines.size() * indention.size());
  std::string rv;
  if (r.bool_or(2, false)) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
  }
  if (r.bool_or(1, false)) rv = indention + rv;
  in.check_size(rv.size());
  return str_result(s, std::move(rv));
}

Value f_items(Interp&, const Value& v, Args& a) {
  ArgReader r("items", a, {});
  if (v.is_undefined()) return make_iterator("generator:do_items", {});
  if (!v.is_dict()) throw_type_error("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.as_dict().items()) pairs.push_back(Value::list({k, val}, true));
  return make_iterator("generator:do_items", std::move(pairs));
}

Value f_join(Interp& in, const Value& v, Args& a) {
  ArgReader r("join", a, {"d", "attribute"});
  const std::string sep = r.value_or(0, Value::string("")).str();
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    const Value x = r.has(1) && !r.get(1)->is_none() ? attr_path(item, *r.get(1), nullptr) : item;
    if (!first) out += sep;
    first = false;
    out += x.str();
    in.check_size(out.size());
  }
  return Value::string(std::move(out));
}

Value f_list(Interp&, const Value& v, Args& a) {
  ArgReader r("list", a, {});
  return Value::list(iterate(v));
}

Value f_lower(Interp&, const Value& v, Args& a) {
  ArgReader r("lower", a, {});
  const Value s = soft_str(v);
  return str_result(s, py::lower(s.as_string()));
}

Value f_upper(Interp&, const Value& v, Args& a) {
  ArgReader r("upper", a, {});
  const Value s = soft_str(v);
  return str_result(s, py::upper(s.as_string()));
}

Value f_map(Interp& in, const Value& v, Args& a) {
  std::vector<Value> items = v.truthy() ? iterate(v) : std::vector<Value>();  // jinja2: `if value:`
  std::vector<Value> out;
  bool by_attribute = a.args.empty();
  Value attribute;
  std::optional<Value> fallback;
  if (by_attribute) {
    for (const auto& [k, val] : a.kwargs) {
      if (k == "attribute") {
        attribute = val;
      } else if (k == "default") {
        fallback = val;
      } else {
        throw EvalError(EvalErrorKind::Value, "Unexpected keyword argument '" + k + "'");
      }
    }
    if (attribute.is_undefined()) throw EvalError(EvalErrorKind::Value, "map requires a filter argument");
  }
  if (by_attribute) {
    const Value* fb = fallback && !fallback->is_none() ? &*fallback : nullptr;
    for (const Value& item : items) out.push_back(attr_path(item, attribute, fb));
    return make_iterator("generator:sync_do_map", std::move(out));
  }
  const std::string name = a.args[0].str();
  CallArgs rest;
  rest.args.assign(a.args.begin() + 1, a.args.end());
  rest.kwargs = a.kwargs;
  for (size_t i = 0; i < items.size(); ++i) {
    try {
      CallArgs copy = rest;
      out.push_back(in.apply_filter(name, items[i], copy));
    } catch (const EvalError& e) {
      return make_iterator("generator:sync_do_map", std::move(out), e, i);
    }
  }
  return make_iterator("generator:sync_do_map", std::move(out));
}

Value min_max(Interp&, const Value& v, Args& a, bool want_max) {
  ArgReader r(want_max ? "max" : "min", a, {"case_sensitive", "attribute"});
  const bool cs = r.bool_or(0, false);
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) {
    return lower_if_str(r.has(1) && !r.get(1)->is_none() ? attr_path(x, *r.get(1), nullptr) : x, cs);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    const int c = compare(k, best_key, want_max ? ">" : "<");
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_max(Interp& in, const Value& v, Args& a) { return min_max(in, v, a, true); }
Value f_min(Interp& in, const Value& v, Args& a) { return min_max(in, v, a, false); }

// select / reject / selectattr / rejectattr
Value select_common(Interp& in, const Value& v, Args& a, bool attr, bool keep_when) {
  size_t off = 0;
  Value attribute;
  if (attr) {
    if (a.args.empty()) throw EvalError(EvalErrorKind::Value, "Missing parameter for attribute name");
    attribute = a.args[0];
    off = 1;
  }
  const bool has_test = a.args.size() > off;
  const std::string test = has_test ? a.args[off].str() : std::string();
  CallArgs rest;
  if (has_test) rest.args.assign(a.args.begin() + static_cast<long>(off) + 1, a.args.end());
  rest.kwargs = a.kwargs;
  std::vector<Value> items = v.truthy() ? iterate(v) : std::vector<Value>();
  std::vector<Value> out;
  for (size_t i = 0; i < items.size(); ++i) {
    try {
      const Value x = attr ? attr_path(items[i], attribute, nullptr) : items[i];
      CallArgs copy = rest;
      const bool t = has_test ? in.apply_test(test, x, copy) : x.truthy();
      if (t == keep_when) out.push_back(items[i]);
    } catch (const EvalError& e) {
      return make_iterator("generator:select_or_reject", std::move(out), e, out.size());
    }
  }
  return make_iterator("generator:select_or_reject", std::move(out));
}

Value f_select(Interp& in, const Value& v, Args& a) { return select_common(in, v, a, false, true); }
Value f_reject(Interp& in, const Value& v, Args& a) { return select_common(in, v, a, false, false); }
Value f_selectattr(Interp& in, const Value& v, Args& a) { return select_common(in, v, a, true, true); }
Value f_rejectattr(Interp& in, const Value& v, Args& a) { return select_common(in, v, a, true, false); }

Value f_replace(Interp& in, const Value& v, Args& a) {
  ArgReader r("replace", a, {"old", "new", "count"});
  if (!r.has(0) || !r.has(1)) throw_type_error("replace() missing required arguments 'old' and 'new'");
  const Value s = soft_str(v);
  const std::string old_s = r.get(0)->str(), new_s = r.get(1)->str();
  in.check_size(replaced_size(s.as_string(), old_s, new_s, r.int_or(2, -1)));
  std::string out = py::replace(s.as_string(), old_s, new_s, r.int_or(2, -1));
  return str_result(s, std::move(out));
}

Value f_reverse(Interp&, const Value& v, Args& a) {
  ArgReader r("reverse", a, {});
  if (v.is_string()) {
    std::u32string cps = py::decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return str_result(v, py::encode(cps));
  }
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  if (v.is_list()) {
    const std::string type = v.type_name();  // list, tuple, dict_keys, dict_values, dict_items
    const std::string name = type == "list"    ? "list_reverseiterator"
                             : type == "tuple" ? "reversed"
                                               : "dict_reverse" + type.substr(5, type.size() - 6) + "iterator";
    return make_iterator(name, std::move(items));
  }
  if (v.is_dict()) return make_iterator("dict_reversekeyiterator", std::move(items));
  return Value::list(std::move(items));
}

Value f_round(Interp&, const Value& v, Args& a) {
  ArgReader r("round", a, {"precision", "method"});
  const int64_t precision = r.int_or(0, 0);
  const std::string method = r.str_or(1, "common");
  if (method != "common" && method != "ceil" && method != "floor") {
    throw EvalError(EvalErrorKind::Value, "method must be common, ceil or floor");
  }
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) throw_type_error("type " + v.type_name() + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float()) return Value::integer(v.as_int());  // round(int, n >= 0) is the int
    const double d = v.as_float();
    if (!std::isfinite(d) || precision > 300) return v;
    if (precision < 0) {
      const double scale = std::pow(10.0, static_cast<double>(-precision));
      return Value::number(std::nearbyint(d / scale) * scale);
    }
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), d);  // correctly rounded, ties to even
    return Value::number(std::strtod(buf, nullptr));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_float() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Interp&, const Value& v, Args& a) {
  ArgReader r("safe", a, {});
  return Value::string(v.str(), true);
}

Value f_slice(Interp& in, const Value& v, Args& a) {
  ArgReader r("slice", a, {"slices", "fill_with"});
  const int64_t slices = r.int_or(0, 0);
  if (slices <= 0) throw EvalError(EvalErrorKind::Value, "slices must be positive");
  in.check_size(static_cast<size_t>(slices));
  std::vector<Value> seq = iterate(v);
  const size_t n = seq.size();
  const size_t per = n / static_cast<size_t>(slices), extra = n % static_cast<size_t>(slices);
  std::vector<Value> out;
  size_t offset = 0;
  for (size_t i = 0; i < static_cast<size_t>(slices); ++i) {
    const size_t start = offset + i * per;
    if (i < extra) ++offset;
    const size_t end = offset + (i + 1) * per;
    Value::List part(seq.begin() + static_cast<long>(start), seq.begin() + static_cast<long>(end));
    if (r.has(1) && !r.get(1)->is_none() && i >= extra) part.push_back(*r.get(1));
    out.push_back(Value::list(std::move(part)));
  }
  return make_iterator("generator:sync_do_slice", std::move(out));
}

Value f_sort(Interp&, const Value& v, Args& a) {
  ArgReader r("sort", a, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = r.bool_or(0, false), cs = r.bool_or(1, false);
  std::vector<Value> attrs;
  if (r.has(2) && !r.get(2)->is_none()) {
    if (r.get(2)->is_string()) {
      for (const std::string& p : py::split(r.get(2)->as_string(), std::string(","), -1)) {
        attrs.push_back(Value::string(py::strip(p, std::nullopt, true, true)));
      }
    } else {
      attrs.push_back(*r.get(2));
    }
  }
  std::vector<Value> items = iterate(v);
  auto key = [&](const Value& x) {
    if (attrs.empty()) return lower_if_str(x, cs);
    Value::List parts;
    for (const Value& at : attrs) parts.push_back(lower_if_str(attr_path(x, at, nullptr), cs));
    return parts.size() == 1 ? parts[0] : Value::list(std::move(parts), true);
  };
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& x : items) keyed.emplace_back(key(x), std::move(x));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(y.first, x.first, "<") < 0 : compare(x.first, y.first, "<") < 0;
  });
  Value::List out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::list(std::move(out));
}

Value f_string(Interp&, const Value& v, Args& a) {
  ArgReader r("string", a, {});
  return soft_str(v);
}

Value f_sum(Interp& in, const Value& v, Args& a) {
  ArgReader r("sum", a, {"attribute", "start"});
  Value total = r.value_or(1, Value::integer(0));
  for (const Value& item : iterate(v)) {
    const Value x = r.has(0) && !r.get(0)->is_none() ? attr_path(item, *r.get(0), nullptr) : item;
    total = binary_op(BinOp::Add, total, x, in);
  }
  return total;
}

Value f_title(Interp&, const Value& v, Args& a) {
  ArgReader r("title", a, {});
  const Value s = soft_str(v);
  // jinja2 splits on runs of [-\s({\[<] and capitalizes each piece.
  const std::u32string cps = py::decode(s.as_string());
  auto is_sep = [](char32_t c) { return py::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<'; };
  std::string out;
  bool at_start = true;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (is_sep(cps[i])) {
      py::append_utf8(out, cps[i]);
      at_start = true;
      continue;
    }
    std::string ch;
    py::append_utf8(ch, cps[i]);
    out += at_start ? py::upper(ch) : py::lower(ch);
    at_start = false;
  }
  return str_result(s, std::move(out));
}

Value f_tojson(Interp& in, const Value& v, Args& a) {
  ArgReader r("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = r.bool_or(0, false);
  if (r.has(1) && !r.get(1)->is_none()) {
    const Value& ind = *r.get(1);
    if (ind.is_string()) {
      o.indent = ind.as_string();
    } else if (ind.is_int() || ind.is_bool()) {
      o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(ind.as_int(), 0, 4096)), ' ');
    } else {
      throw_type_error("can't multiply sequence by non-int of type '" + ind.type_name() + "'");
    }
  }
  o.item_separator = o.indent ? "," : ", ";
  if (r.has(2) && !r.get(2)->is_none()) {
    std::vector<Value> seps = iterate(*r.get(2));
    if (seps.size() != 2) throw EvalError(EvalErrorKind::Value, "separators must be an (item, key) pair");
    o.item_separator = seps[0].str();
    o.key_separator = seps[1].str();
  }
  o.sort_keys = r.bool_or(3, false);
  o.max_bytes = in.max_text_bytes();
  std::string out = json_dumps(v, o);
  in.check_size(out.size());
  return Value::string(std::move(out));
}

Value f_trim(Interp&, const Value& v, Args& a) {
  ArgReader r("trim", a, {"chars"});
  const Value s = soft_str(v);
  return str_result(s, py::strip(s.as_string(), r.str_opt(0), true, true));
}

Value f_truncate(Interp&, const Value& v, Args& a) {
  ArgReader r("truncate", a, {"length", "killwords", "end", "leeway"});
  const int64_t length = r.int_or(0, 255), leeway = r.int_or(3, 5);
  const std::string end = r.str_or(2, "...");
  if (length < static_cast<int64_t>(py::cp_length(end)))
    throw EvalError(EvalErrorKind::Value, "expected length >= " + std::to_string(py::cp_length(end)));
  if (!v.is_string()) {  // jinja2 takes len() of the value as it is
    if (py_len(v) <= length + leeway) return v;
    throw_type_error("truncate expects a string, got '" + v.type_name() + "'");
  }
  const Value& s = v;
  const std::u32string cps = py::decode(s.as_string());
  if (static_cast<int64_t>(cps.size()) <= length + leeway) return s;
  const size_t keep = static_cast<size_t>(length - static_cast<int64_t>(py::cp_length(end)));
  std::u32string head = cps.substr(0, keep);
  if (!r.bool_or(1, false)) {
    const size_t sp = head.rfind(U' ');
    if (sp != std::u32string::npos) head = head.substr(0, sp);
  }
  return str_result(s, py::encode(head) + end);
}

Value f_unique(Interp&, const Value& v, Args& a) {
  ArgReader r("unique", a, {"case_sensitive", "attribute"});
  const bool cs = r.bool_or(0, false);
  std::vector<Value> out;
  Dict seen;
  for (const Value& item : iterate(v)) {
    const Value key = lower_if_str(r.has(1) && !r.get(1)->is_none() ? attr_path(item, *r.get(1), nullptr) : item, cs);
    if (seen.find(key)) continue;
    seen.set(key, Value::none());
    out.push_back(item);
  }
  return make_iterator("generator:do_unique", std::move(out));
}

Value f_wordcount(Interp&, const Value& v, Args& a) {
  ArgReader r("wordcount", a, {});
  int64_t n = 0;
  bool in_word = false;
  const std::string s = v.str();
  for (size_t pos = 0; pos < s.size();) {
    const bool w = py::is_word(py::next_cp(s, pos));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

// jinja2 writes these filters as generator functions: nothing runs until the result is iterated, so
// an error (say, batching a number) only surfaces when — and if — the generator is consumed.
template <FilterFn F, const char* Name>
Value lazy(Interp& in, const Value& v, Args& a) {
  try {
    return F(in, v, a);
  } catch (const EvalError& e) {
    if (e.kind() == EvalErrorKind::Limit) throw;
    return make_iterator(std::string("generator:") + Name, {}, e, 0);
  }
}

constexpr char kDoBatch[] = "do_batch", kDoItems[] = "do_items", kDoMap[] = "sync_do_map", kDoSlice[] = "sync_do_slice",
               kDoUnique[] = "do_unique", kSelectOrReject[] = "select_or_reject";

constexpr FilterDef kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", lazy<f_batch, kDoBatch>},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", nullptr},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"groupby", nullptr},
    {"indent", f_indent},
    {"int", f_int},
    {"items", lazy<f_items, kDoItems>},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", lazy<f_map, kDoMap>},
    {"max", f_max},
    {"min", f_min},
    {"pprint", nullptr},
    {"random", nullptr},
    {"reject", lazy<f_reject, kSelectOrReject>},
    {"rejectattr", lazy<f_rejectattr, kSelectOrReject>},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", lazy<f_select, kSelectOrReject>},
    {"selectattr", lazy<f_selectattr, kSelectOrReject>},
    {"slice", lazy<f_slice, kDoSlice>},
    {"sort", f_sort},
    {"string", f_string},
    {"striptags", nullptr},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", lazy<f_unique, kDoUnique>},
    {"upper", f_upper},
    {"urlencode", nullptr},
    {"urlize", nullptr},
    {"wordcount", f_wordcount},
    {"wordwrap", nullptr},
    {"xmlattr", nullptr},
};

}  // namespace

const FilterDef* find_filter(std::string_view name) {
  for (const FilterDef& f : kFilters) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

}  // namespace inferdesk::chat
