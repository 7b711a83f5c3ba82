#include "core/util/json_guard.h"

#include <utility>
#include <vector>

#include "core/util/error.h"

namespace inferdesk {

void check_json_depth(std::string_view text, const std::string& source, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth)
          throw Error(ErrorCode::Format, source + ": JSON nested deeper than " + std::to_string(max_depth) + " levels");
        break;
      case ']':
      case '}': --depth; break;
      default: break;
    }
  }
}

template <typename J>
static J parse_checked(std::string_view text, const std::string& source, int max_depth) {
  check_json_depth(text, source, max_depth);
  try {
    return J::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::Format, source + ": invalid JSON: " + e.what());
  }
}

nlohmann::json parse_untrusted_json(std::string_view text, const std::string& source, int max_depth) {
  return parse_checked<nlohmann::json>(text, source, max_depth);
}

nlohmann::ordered_json parse_untrusted_ordered_json(std::string_view text, const std::string& source, int max_depth) {
  return parse_checked<nlohmann::ordered_json>(text, source, max_depth);
}

namespace {

using nlohmann::json;

// Builds the document as nlohmann's own DOM parser does, and refuses as it goes what that parser
// would accept silently: a key twice in one object, nesting deeper than the limit, an object
// with more members than the limit. Linear in the input: nlohmann's callback parser, which this
// replaces, scans the parent's members for discarded values each time a child object closes,
// quadratic in the size of the parent (a safetensors header of 50k tensors took over a minute).
class StrictBuilder : public nlohmann::json_sax<json> {
 public:
  StrictBuilder(const std::string& source, const JsonLimits& limits) : source_(source), limits_(limits) {}
  json take() { return std::move(root_); }

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t&) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    auto& obj = stack_.back()->get_ref<json::object_t&>();
    if (obj.size() >= limits_.max_object_members) {
      throw Error(ErrorCode::Format, source_ + ": a JSON object has more than " +
                                         std::to_string(limits_.max_object_members) +
                                         " entries, the limit for this kind of file");
    }
    auto [it, inserted] = obj.emplace(std::move(k), nullptr);
    if (!inserted) throw Error(ErrorCode::Format, source_ + ": duplicate key " + quote_untrusted(it->first));
    slot_ = &it->second;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(ErrorCode::Format, source_ + ": invalid JSON: " + e.what());
  }

 private:
  // Where the next value goes: the root, the end of the open array, or the slot of the last key.
  template <typename V>
  json* put(V&& v) {
    if (stack_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      auto& arr = top.get_ref<json::array_t&>();
      arr.emplace_back(std::forward<V>(v));
      return &arr.back();
    }
    *slot_ = json(std::forward<V>(v));
    return slot_;
  }
  bool open(json empty) {
    if (static_cast<int>(stack_.size()) + 1 > limits_.max_depth) {
      throw Error(ErrorCode::Format,
                  source_ + ": JSON nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    // Pointers to open containers stay valid: only the innermost one grows until it is closed.
    stack_.push_back(put(std::move(empty)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  const std::string& source_;
  const JsonLimits& limits_;
  json root_;
  std::vector<json*> stack_;
  json* slot_ = nullptr;
};

}  // namespace

nlohmann::json parse_untrusted_json_strict(std::string_view text, const std::string& source, const JsonLimits& limits) {
  StrictBuilder builder(source, limits);
  try {
    json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const json::exception& e) {  // from the lexer, outside parse_error
    throw Error(ErrorCode::Format, source + ": invalid JSON: " + e.what());
  }
  return builder.take();
}

std::string quote_untrusted(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace inferdesk
