// Python string formatting: str.format() with the format-spec mini-language, and "%" formatting.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/chat/builtins.h"
#include "core/chat/interp.h"
#include "core/chat/pystr.h"

namespace inferdesk::chat {

namespace {

[[noreturn]] void value_error(const std::string& m) { throw EvalError(EvalErrorKind::Value, m); }

struct Spec {
  char32_t fill = ' ';
  char align = 0;  // '<' '>' '^' '='
  char sign = '-';
  bool alt = false;
  bool zero = false;
  int64_t width = -1;
  char grouping = 0;
  int64_t precision = -1;
  char type = 0;
};

Spec parse_spec(const std::string& text) {
  Spec s;
  const std::u32string cps = py::decode(text);
  size_t i = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    s.fill = cps[0];
    s.align = static_cast<char>(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    s.align = static_cast<char>(cps[0]);
    i = 1;
  }
  if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' ')) s.sign = static_cast<char>(cps[i++]);
  if (i < cps.size() && cps[i] == '#') {
    s.alt = true;
    ++i;
  }
  if (i < cps.size() && cps[i] == '0') {
    s.zero = true;
    ++i;
  }
  auto read_int = [&]() {
    int64_t v = -1;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') {
      v = (v < 0 ? 0 : v) * 10 + (cps[i++] - '0');
      if (v > 1'000'000) value_error("Too many decimal digits in format string");
    }
    return v;
  };
  s.width = read_int();
  if (i < cps.size() && (cps[i] == ',' || cps[i] == '_')) s.grouping = static_cast<char>(cps[i++]);
  if (i < cps.size() && cps[i] == '.') {
    ++i;
    s.precision = read_int();
    if (s.precision < 0) value_error("Format specifier missing precision");
  }
  if (i < cps.size()) s.type = static_cast<char>(cps[i++]);
  if (i != cps.size()) value_error("Invalid format specifier '" + text + "'");
  return s;
}

std::string group_digits(const std::string& digits, char sep) {
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i && (n - i) % 3 == 0) out.push_back(sep);
    out.push_back(digits[i]);
  }
  return out;
}

// Pads `body` (sign already separated) to the spec's width.
std::string apply_width(const std::string& sign, const std::string& body, const Spec& s, char default_align) {
  char align = s.align ? s.align : default_align;
  char32_t fill = s.fill;
  if (s.zero && !s.align) {
    align = '=';
    fill = '0';
  }
  const int64_t len = static_cast<int64_t>(py::cp_length(sign) + py::cp_length(body));
  if (s.width <= len) return sign + body;
  if (align == '=') return sign + py::pad(body, s.width - static_cast<int64_t>(py::cp_length(sign)), fill, '>');
  return py::pad(sign + body, s.width, fill, align);
}

std::string format_float(double v, const Spec& s) {
  char type = s.type;
  std::string body;
  const bool neg = std::signbit(v) && !std::isnan(v);
  const double a = std::fabs(v);
  char buf[512];
  if (!type && s.precision < 0) {
    body = py::float_repr(a);
  } else if (std::isinf(a) || std::isnan(a)) {
    body = std::isnan(a) ? "nan" : "inf";
    if (type == 'F' || type == 'E' || type == 'G') body = py::upper(body);
  } else {
    const int p = static_cast<int>(s.precision < 0 ? 6 : std::min<int64_t>(s.precision, 100));
    if (type == '%') {
      std::snprintf(buf, sizeof buf, "%.*f%%", p, a * 100);
    } else if (type == 'f' || type == 'F' || type == 'e' || type == 'E') {
      const char f[] = {'%', '.', '*', type == 'F' ? 'f' : type, 0};
      std::snprintf(buf, sizeof buf, f, p, a);
    } else {  // g, G, n, or none with a precision
      const char f[] = {'%', '.', '*', type == 'G' ? 'G' : 'g', 0};
      std::snprintf(buf, sizeof buf, f, p == 0 ? 1 : p, a);
      if (!type) {
        std::string t(buf);
        if (t.find_first_of(".eEn") == std::string::npos) t += ".0";
        std::snprintf(buf, sizeof buf, "%s", t.c_str());
      }
    }
    body = buf;
  }
  if (s.grouping) {
    const size_t dot = body.find_first_of(".eE%");
    body = group_digits(body.substr(0, dot), s.grouping) + (dot == std::string::npos ? "" : body.substr(dot));
  }
  const std::string sign = neg ? "-" : (s.sign == '+' ? "+" : (s.sign == ' ' ? " " : ""));
  return apply_width(sign, body, s, '>');
}

std::string format_int(int64_t v, const Spec& s) {
  const char type = s.type ? s.type : 'd';
  if (type == 'e' || type == 'E' || type == 'f' || type == 'F' || type == 'g' || type == 'G' || type == '%') {
    return format_float(static_cast<double>(v), s);
  }
  const bool neg = v < 0;
  const uint64_t a = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  std::string prefix;
  if (type == 'c') {
    py::append_utf8(digits, static_cast<char32_t>(a));
  } else if (type == 'd' || type == 'n') {
    digits = std::to_string(a);
    if (s.grouping) digits = group_digits(digits, s.grouping);
  } else if (type == 'x' || type == 'X' || type == 'o' || type == 'b') {
    const unsigned base = type == 'o' ? 8 : (type == 'b' ? 2 : 16);
    uint64_t x = a;
    do {
      digits.insert(digits.begin(), "0123456789abcdef"[x % base]);
      x /= base;
    } while (x);
    if (type == 'X') digits = py::upper(digits);
    if (s.alt) prefix = type == 'o' ? "0o" : (type == 'b' ? "0b" : (type == 'X' ? "0X" : "0x"));
  } else {
    value_error(std::string("Unknown format code '") + type + "' for object of type 'int'");
  }
  const std::string sign = neg ? "-" : (s.sign == '+' ? "+" : (s.sign == ' ' ? " " : ""));
  return apply_width(sign + prefix, digits, s, '>');
}

std::string format_value(const Value& v, const std::string& spec_text) {
  if (spec_text.empty()) return v.str();
  const Spec s = parse_spec(spec_text);
  if (v.is_string()) {
    if (s.type && s.type != 's')
      value_error(std::string("Unknown format code '") + s.type + "' for object of type 'str'");
    std::string body = v.as_string();
    if (s.precision >= 0) {
      const std::u32string cps = py::decode(body);
      if (static_cast<int64_t>(cps.size()) > s.precision) body = py::encode(cps.substr(0, s.precision));
    }
    return apply_width("", body, s, '<');
  }
  if (v.is_int() || v.is_bool()) return format_int(v.as_int(), s);
  if (v.is_float()) return format_float(v.as_float(), s);
  throw_type_error("unsupported format string passed to " + v.type_name() + ".__format__");
}

Value resolve_field(const std::string& field, const CallArgs& args, size_t& auto_index) {
  size_t i = 0;
  while (i < field.size() && field[i] != '.' && field[i] != '[') ++i;
  const std::string head = field.substr(0, i);
  Value v;
  if (head.empty() || (head.find_first_not_of("0123456789") == std::string::npos)) {
    size_t idx = auto_index;
    if (head.empty()) {
      ++auto_index;
    } else if (std::from_chars(head.data(), head.data() + head.size(), idx).ec != std::errc()) {
      value_error("Too many decimal digits in format string");
    }
    if (idx >= args.args.size()) {
      throw EvalError(EvalErrorKind::Value,
                      "Replacement index " + std::to_string(idx) + " out of range for positional args tuple");
    }
    v = args.args[idx];
  } else {
    bool found = false;
    for (const auto& [k, val] : args.kwargs) {
      if (k == head) {
        v = val;
        found = true;
      }
    }
    if (!found) throw EvalError(EvalErrorKind::Value, "KeyError: '" + head + "'");
  }
  while (i < field.size()) {
    if (field[i] == '.') {
      size_t j = i + 1;
      while (j < field.size() && field[j] != '.' && field[j] != '[') ++j;
      v = get_attribute(v, field.substr(i + 1, j - i - 1));
      i = j;
    } else {
      const size_t j = field.find(']', i);
      if (j == std::string::npos) value_error("Missing ']' in format string");
      const std::string key = field.substr(i + 1, j - i - 1);
      const bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
      int64_t index = 0;
      if (numeric && std::from_chars(key.data(), key.data() + key.size(), index).ec != std::errc()) {
        value_error("Too many decimal digits in format string");
      }
      v = get_item(v, numeric ? Value::integer(index) : Value::string(key));
      i = j + 1;
    }
    if (v.is_undefined()) fail_undefined(v);
  }
  return v;
}

}  // namespace

std::string str_format(Interp& interp, const std::string& format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      value_error("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = format.find('}', i + 1);
    if (close == std::string::npos) value_error("Single '{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    std::string spec;
    char conv = 0;
    const size_t colon = field.find(':');
    if (colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    const size_t bang = field.find('!');
    if (bang != std::string::npos) {
      if (bang + 2 != field.size()) value_error("expected ':' after conversion specifier");
      conv = field[bang + 1];
      field.resize(bang);
    }
    Value v = resolve_field(field, args, auto_index);
    if (conv == 'r' || conv == 'a') {
      v = Value::string(v.repr());
    } else if (conv == 's') {
      v = Value::string(v.str());
    } else if (conv) {
      value_error(std::string("Unknown conversion specifier ") + conv);
    }
    out += format_value(v, spec);
    interp.check_size(out.size());
    i = close;
  }
  return out;
}

namespace {

// Flags, width and precision of one "%" directive, from format[i]; leaves i on the conversion char.
Spec parse_percent_flags(const std::string& format, size_t& i) {
  Spec s;
  for (; i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos; ++i) {
    if (format[i] == '-') s.align = '<';
    if (format[i] == '+') s.sign = '+';
    if (format[i] == ' ' && s.sign != '+') s.sign = ' ';
    if (format[i] == '#') s.alt = true;
    if (format[i] == '0') s.zero = true;
  }
  for (; i < format.size() && format[i] >= '0' && format[i] <= '9'; ++i) {
    s.width = (s.width < 0 ? 0 : s.width) * 10 + (format[i] - '0');
    if (s.width > 1'000'000) value_error("width too big");
  }
  if (i < format.size() && format[i] == '.') {
    s.precision = 0;
    for (++i; i < format.size() && format[i] >= '0' && format[i] <= '9'; ++i) {
      s.precision = s.precision * 10 + (format[i] - '0');
      if (s.precision > 1000) value_error("precision too big");
    }
  }
  if (i >= format.size()) value_error("incomplete format");
  if (s.zero && s.align == '<') s.zero = false;
  if (s.align != '<') s.align = 0;
  return s;
}

std::string percent_convert(char conv, const Value& v, Spec s) {
  const std::string c(1, conv);
  switch (conv) {
    case 's': return apply_width("", v.str(), s, '>');
    case 'r':
    case 'a': return apply_width("", v.repr(), s, '>');
    case 'd':
    case 'i':
    case 'u':
      if (!v.is_number()) throw_type_error("%" + c + " format: a real number is required, not " + v.type_name());
      s.type = 'd';
      return format_int(v.is_float() ? static_cast<int64_t>(std::trunc(v.as_float())) : v.as_int(), s);
    case 'x':
    case 'X':
    case 'o':
      if (!v.is_int() && !v.is_bool())
        throw_type_error("%" + c + " format: an integer is required, not " + v.type_name());
      s.type = conv;
      return format_int(v.as_int(), s);
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
      if (!v.is_number()) throw_type_error("must be real number, not " + v.type_name());
      s.type = conv;
      if (s.precision < 0) s.precision = 6;
      return format_float(v.as_float(), s);
    case 'c': {
      if (v.is_string()) return v.as_string();
      std::string out;
      py::append_utf8(out, static_cast<char32_t>(v.as_int()));
      return out;
    }
    default: value_error("unsupported format character '" + c + "'");
  }
}

}  // namespace

std::string percent_format(const std::string& format, const Value& args) {
  const bool mapping = args.is_dict();
  const std::vector<Value> values = args.is_tuple() ? args.as_list() : std::vector<Value>{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out.push_back(format[i]);
      continue;
    }
    if (++i >= format.size()) value_error("incomplete format");
    Value v;
    bool have = false;
    if (format[i] == '(') {  // %(name)s
      const size_t close = format.find(')', i);
      if (close == std::string::npos || !mapping) throw_type_error("format requires a mapping");
      const Value* found = args.as_dict().find(format.substr(i + 1, close - i - 1));
      if (!found) value_error("KeyError: '" + format.substr(i + 1, close - i - 1) + "'");
      v = *found;
      have = true;
      i = close + 1;
    }
    const Spec s = parse_percent_flags(format, i);
    const char conv = format[i];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (!have) {
      if (mapping) {
        v = args;
      } else {
        if (next >= values.size()) throw_type_error("not enough arguments for format string");
        v = values[next++];
      }
    }
    out += percent_convert(conv, v, s);
  }
  // Python skips this check for arguments that support item access (dict, list), not for tuples or str.
  const bool subscriptable = mapping || args.is_undefined() || (args.is_sequence_list() && !args.is_tuple());
  if (!subscriptable && next < values.size()) throw_type_error("not all arguments converted during string formatting");
  return out;
}

}  // namespace inferdesk::chat
