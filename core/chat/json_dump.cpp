// json.dumps() as Python writes it (the tojson filter transformers installs).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/chat/builtins.h"
#include "core/chat/pystr.h"

namespace inferdesk::chat {

namespace {

void append_escaped(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  char buf[16];
  for (size_t pos = 0; pos < s.size();) {
    const auto byte = static_cast<unsigned char>(s[pos]);
    if (byte >= 0x80) {
      const size_t start = pos;
      const char32_t cp = py::next_cp(s, pos);
      if (!ensure_ascii) {
        out.append(s, start, pos - start);
      } else if (cp < 0x10000) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
        out += buf;
      } else {
        const char32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
        out += buf;
      }
      continue;
    }
    ++pos;
    switch (byte) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (byte < 0x20 || (ensure_ascii && byte == 0x7F)) {
          std::snprintf(buf, sizeof buf, "\\u%04x", byte);
          out += buf;
        } else {
          out.push_back(static_cast<char>(byte));
        }
    }
  }
  out.push_back('"');
}

std::string float_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return py::float_repr(v);
}

std::string key_string(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String: return k.as_string();
    case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
    case Value::Kind::None: return "null";
    case Value::Kind::Int: return std::to_string(k.as_int());
    case Value::Kind::Float: return float_json(k.as_float());
    default: throw_type_error("keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {}

  void dump(const Value& v, int level) {
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: out += float_json(v.as_float()); return;
      case Value::Kind::String:
        append_escaped(out, v.as_string(), o_.ensure_ascii);
        check();
        return;
      case Value::Kind::List:
        if (v.is_view()) break;
        return dump_list(v.as_list(), level);
      case Value::Kind::Dict: return dump_dict(v.as_dict(), level);
      default: break;
    }
    throw_type_error("Object of type " + v.type_name() + " is not JSON serializable");
  }

  std::string out;

 private:
  void newline(int level) {
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *o_.indent;
    check();
  }

  void check() const {
    if (out.size() > o_.max_bytes) {
      throw EvalError(EvalErrorKind::Limit, "tojson output exceeds " + std::to_string(o_.max_bytes) + " bytes");
    }
  }

  void dump_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out.push_back('[');
    if (o_.indent) newline(level + 1);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) {
        out += o_.item_separator;
        if (o_.indent) newline(level + 1);
      }
      dump(items[i], level + 1);
      check();  // numbers too: lists sharing their halves hold 2^n of them
    }
    if (o_.indent) newline(level);
    out.push_back(']');
  }

  void dump_dict(const Dict& d, int level) {
    if (d.empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> items;
    for (const auto& kv : d.items()) items.push_back(&kv);
    if (o_.sort_keys) {
      std::stable_sort(items.begin(), items.end(),
                       [](const auto* a, const auto* b) { return compare(a->first, b->first, "<") < 0; });
    }
    out.push_back('{');
    if (o_.indent) newline(level + 1);
    bool first = true;
    for (const auto* kv : items) {
      if (!first) {
        out += o_.item_separator;
        if (o_.indent) newline(level + 1);
      }
      first = false;
      append_escaped(out, key_string(kv->first), o_.ensure_ascii);
      out += o_.key_separator;
      dump(kv->second, level + 1);
      check();
    }
    if (o_.indent) newline(level);
    out.push_back('}');
  }

  const JsonDumpOptions& o_;
};

}  // namespace

std::string json_dumps(const Value& value, const JsonDumpOptions& options) {
  Dumper d(options);
  d.dump(value, 0);
  return std::move(d.out);
}

}  // namespace inferdesk::chat
