// Normalizers (tokenizer.json "normalizer"): Sequence, Prepend, Replace, NFC, NFD, Strip.
#include <vector>

#include "core/tokenizer/json_util.h"
#include "core/tokenizer/pipeline.h"
#include "core/tokenizer/regex.h"
#include "core/tokenizer/unicode_norm.h"
#include "core/tokenizer/utf8.h"

namespace inferdesk::tok {
namespace {

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(std::string_view in) const override {
    std::string s(in);
    for (const auto& p : parts_) s = p->normalize(s);
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

// Prepends a string to non-empty text.
class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string_view in) const override {
    if (in.empty()) return {};
    std::string s;
    s.reserve(prefix_.size() + in.size());
    s += prefix_;
    s += in;
    return s;
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(const PatternSpec& pattern, std::string content, const std::string& where)
      : literal_(pattern.is_regex ? "" : pattern.text), content_(std::move(content)) {
    if (pattern.is_regex)
      regex_ = std::make_unique<Regex>(pattern.text, where + ".pattern");
    else if (literal_.empty())
      fail(where + ".pattern", "empty String pattern");
  }
  std::string normalize(std::string_view in) const override {
    std::string out;
    out.reserve(in.size() + in.size() / 4);
    size_t prev = 0;
    if (regex_) {
      std::vector<std::pair<size_t, size_t>> m;
      regex_->find_all(in, m);
      for (auto [a, b] : m) {
        out.append(in.substr(prev, a - prev));
        out += content_;
        prev = b;
      }
    } else {
      for (size_t pos = in.find(literal_); pos != std::string_view::npos; pos = in.find(literal_, prev)) {
        out.append(in.substr(prev, pos - prev));
        out += content_;
        prev = pos + literal_.size();
      }
    }
    out.append(in.substr(prev));
    return out;
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

class NfcNormalizer final : public Normalizer {
 public:
  explicit NfcNormalizer(bool compose) : compose_(compose) {}
  std::string normalize(std::string_view in) const override { return compose_ ? to_nfc(in) : to_nfd(in); }

 private:
  bool compose_;
};

// Strips Unicode whitespace on the left and/or right.
class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string_view in) const override {
    size_t a = 0, b = in.size();
    if (left_) {
      while (a < b) {
        size_t i = a;
        if (!is_unicode_whitespace(next_code_point(in, i))) break;
        a = i;
      }
    }
    if (right_) {
      while (b > a) {
        size_t start = b - 1;
        while (start > a && (static_cast<unsigned char>(in[start]) & 0xC0) == 0x80) --start;
        size_t i = start;
        if (!is_unicode_whitespace(next_code_point(in, i))) break;
        b = start;
      }
    }
    return std::string(in.substr(a, b - a));
  }

 private:
  bool left_, right_;
};

}  // namespace

std::unique_ptr<Normalizer> make_nfc_normalizer() { return std::make_unique<NfcNormalizer>(true); }

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = stage_type(j, where);
  if (type == "Sequence") {
    const auto& list = member(j, "normalizers", where);
    if (!list.is_array()) fail(where + ".normalizers", "expected an array");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto n = make_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]");
      if (n) parts.push_back(std::move(n));
    }
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(get_string(j, "prepend", where));
  if (type == "Replace")
    return std::make_unique<ReplaceNormalizer>(get_pattern(j, where), get_string(j, "content", where), where);
  if (type == "NFC") return std::make_unique<NfcNormalizer>(true);
  if (type == "NFD") return std::make_unique<NfcNormalizer>(false);
  if (type == "Strip")
    return std::make_unique<StripNormalizer>(get_bool_or(j, "strip_left", false, where),
                                             get_bool_or(j, "strip_right", false, where));
  throw Error(ErrorCode::Unsupported,
              where + ": normalizer type \"" + type +
                  "\" is not supported (supported: Sequence, Prepend, Replace, NFC, NFD, Strip)");
}

}  // namespace inferdesk::tok
