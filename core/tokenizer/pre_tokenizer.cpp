// Pre-tokenizers (tokenizer.json "pre_tokenizer"): Sequence, Split, ByteLevel, Metaspace, Digits,
// Whitespace, WhitespaceSplit, Punctuation. Splitting follows HF's SplitDelimiterBehavior rules.
#include <algorithm>
#include <utility>
#include <vector>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/json_util.h"
#include "core/tokenizer/pipeline.h"
#include "core/tokenizer/regex.h"

namespace inferdesk::tok {
namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const std::string& s, const std::string& where) {
  if (s == "Removed") return Behavior::Removed;
  if (s == "Isolated") return Behavior::Isolated;
  if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::MergedWithNext;
  if (s == "Contiguous") return Behavior::Contiguous;
  fail(where + ".behavior", "unknown split behavior \"" + s + "\"");
}

struct Segment {
  size_t start, end;
  bool flag;  // is_match before the behavior is applied; "remove" after
};

// Splits `piece` at the given regex matches according to `behavior` (HF NormalizedString::split).
void split_piece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches, Behavior behavior,
                 bool invert, std::vector<Piece>& out) {
  const std::string_view s = piece.text;
  std::vector<Segment> segs;
  segs.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (auto [a, b] : matches) {
    if (prev != a) segs.push_back({prev, a, invert});
    segs.push_back({a, b, !invert});
    prev = b;
  }
  if (prev != s.size() || s.empty()) segs.push_back({prev, s.size(), invert});

  std::vector<Segment> res;
  res.reserve(segs.size());
  switch (behavior) {
    case Behavior::Isolated:
      for (auto& g : segs) res.push_back({g.start, g.end, false});
      break;
    case Behavior::Removed: res = segs; break;
    case Behavior::Contiguous: {
      bool prev_match = false;
      for (auto& g : segs) {
        if (g.flag == prev_match && !res.empty())
          res.back().end = g.end;
        else
          res.push_back({g.start, g.end, false});
        prev_match = g.flag;
      }
      break;
    }
    case Behavior::MergedWithPrevious: {
      bool prev_match = false;
      for (auto& g : segs) {
        if (g.flag && !prev_match && !res.empty())
          res.back().end = g.end;
        else
          res.push_back({g.start, g.end, false});
        prev_match = g.flag;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool prev_match = false;
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->flag && !prev_match && !res.empty())
          res.back().start = it->start;
        else
          res.push_back({it->start, it->end, false});
        prev_match = it->flag;
      }
      std::reverse(res.begin(), res.end());
      break;
    }
  }
  for (auto& g : res) {
    if (g.flag || g.end == g.start) continue;
    out.push_back({s.substr(g.start, g.end - g.start), piece.at_origin && g.start == 0});
  }
}

// Split on a regex (also used for Digits, Whitespace, Punctuation).
class RegexSplit final : public PreTokenizer {
 public:
  RegexSplit(std::string_view pattern, Behavior behavior, bool invert, const std::string& where)
      : regex_(pattern, where), behavior_(behavior), invert_(invert) {}
  void apply(std::vector<Piece>& pieces, Arena&) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 2);
    std::vector<std::pair<size_t, size_t>> m;
    for (const auto& p : pieces) {
      m.clear();
      regex_.find_all(p.text, m);
      split_piece(p, m, behavior_, invert_, out);
    }
    pieces.swap(out);
  }

 private:
  Regex regex_;
  Behavior behavior_;
  bool invert_;
};

constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPre final : public PreTokenizer {
 public:
  ByteLevelPre(bool add_prefix_space, bool use_regex, const std::string& where) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, where);
  }
  void apply(std::vector<Piece>& pieces, Arena& arena) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 2);
    std::vector<std::pair<size_t, size_t>> m;
    for (Piece p : pieces) {
      if (add_prefix_space_ && (p.text.empty() || p.text.front() != ' ')) {
        std::string s = " ";
        s += p.text;
        p.text = arena.keep(std::move(s));
      }
      if (regex_) {
        m.clear();
        regex_->find_all(p.text, m);
        split_piece(p, m, Behavior::Isolated, false, out);
      } else if (!p.text.empty()) {
        out.push_back(p);
      }
    }
    if (!defer_) {
      for (auto& p : out) {
        std::string mapped;
        byte_level_encode(p.text, mapped);
        p.text = arena.keep(std::move(mapped));
      }
    }
    pieces.swap(out);
  }
  bool defer_byte_mapping() override {
    defer_ = true;
    return true;
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
  bool defer_ = false;
};

class MetaspacePre final : public PreTokenizer {
 public:
  enum class Scheme { Always, First, Never };
  MetaspacePre(std::string replacement, Scheme scheme, bool split)
      : rep_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void apply(std::vector<Piece>& pieces, Arena& arena) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (const Piece& p : pieces) {
      std::string s;
      s.reserve(p.text.size() + rep_.size() * 2);
      const bool starts = p.text.substr(0, 1) == " " || p.text.substr(0, rep_.size()) == rep_;
      if (!starts && (scheme_ == Scheme::Always || (scheme_ == Scheme::First && p.at_origin))) s += rep_;
      for (char c : p.text) {
        if (c == ' ')
          s += rep_;
        else
          s += c;
      }
      const Piece np{arena.keep(std::move(s)), p.at_origin};
      if (!split_) {
        if (!np.text.empty()) out.push_back(np);
        continue;
      }
      std::vector<std::pair<size_t, size_t>> m;
      for (size_t pos = np.text.find(rep_); pos != std::string_view::npos; pos = np.text.find(rep_, pos + rep_.size()))
        m.emplace_back(pos, pos + rep_.size());
      split_piece(np, m, Behavior::MergedWithNext, false, out);
    }
    pieces.swap(out);
  }

 private:
  std::string rep_;
  Scheme scheme_;
  bool split_;
};

class SequencePre final : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void apply(std::vector<Piece>& pieces, Arena& arena) const override {
    for (const auto& p : parts_) p->apply(pieces, arena);
  }
  bool defer_byte_mapping() override { return !parts_.empty() && parts_.back()->defer_byte_mapping(); }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

MetaspacePre::Scheme parse_scheme(const nlohmann::json& j, const std::string& where) {
  if (j.contains("prepend_scheme")) {
    const std::string s = get_string(j, "prepend_scheme", where);
    if (s == "always") return MetaspacePre::Scheme::Always;
    if (s == "first") return MetaspacePre::Scheme::First;
    if (s == "never") return MetaspacePre::Scheme::Never;
    fail(where + ".prepend_scheme", "unknown value \"" + s + "\"");
  }
  return get_bool_or(j, "add_prefix_space", true, where) ? MetaspacePre::Scheme::Always : MetaspacePre::Scheme::Never;
}

std::unique_ptr<PreTokenizer> make_split(const nlohmann::json& j, const std::string& where) {
  const PatternSpec pat = get_pattern(j, where);
  const std::string regex = pat.is_regex ? pat.text : quote_literal(pat.text);
  if (!pat.is_regex && pat.text.empty()) fail(where + ".pattern", "empty String pattern");
  return std::make_unique<RegexSplit>(regex, parse_behavior(get_string(j, "behavior", where), where),
                                      get_bool_or(j, "invert", false, where), where + ".pattern");
}

}  // namespace

std::unique_ptr<PreTokenizer> make_metaspace_pre_tokenizer(std::string replacement, std::string prepend_scheme,
                                                           bool split) {
  const auto scheme = prepend_scheme == "always"  ? MetaspacePre::Scheme::Always
                      : prepend_scheme == "first" ? MetaspacePre::Scheme::First
                                                  : MetaspacePre::Scheme::Never;
  return std::make_unique<MetaspacePre>(std::move(replacement), scheme, split);
}

std::unique_ptr<PreTokenizer> make_split_byte_level_pre_tokenizer(const std::string& regex) {
  std::vector<std::unique_ptr<PreTokenizer>> parts;
  parts.push_back(std::make_unique<RegexSplit>(regex, Behavior::Isolated, false, "built-in split regex"));
  parts.push_back(std::make_unique<ByteLevelPre>(false, false, "built-in ByteLevel"));
  return std::make_unique<SequencePre>(std::move(parts));
}

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
  return std::make_unique<ByteLevelPre>(add_prefix_space, use_regex, "built-in ByteLevel");
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = stage_type(j, where);
  if (type == "Sequence") {
    const auto& list = member(j, "pretokenizers", where);
    if (!list.is_array()) fail(where + ".pretokenizers", "expected an array");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p = make_pre_tokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]");
      if (p) parts.push_back(std::move(p));
    }
    return std::make_unique<SequencePre>(std::move(parts));
  }
  if (type == "Split") return make_split(j, where);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPre>(get_bool_or(j, "add_prefix_space", true, where),
                                          get_bool_or(j, "use_regex", true, where), where);
  if (type == "Metaspace")
    return std::make_unique<MetaspacePre>(get_string_or(j, "replacement", "\xE2\x96\x81", where),
                                          parse_scheme(j, where), get_bool_or(j, "split", true, where));
  if (type == "Digits")
    return std::make_unique<RegexSplit>(get_bool_or(j, "individual_digits", false, where) ? R"(\p{N})" : R"(\p{N}+)",
                                        Behavior::Isolated, false, where);
  if (type == "Whitespace")
    return std::make_unique<RegexSplit>(R"([\p{L}\p{M}\p{Nd}\p{Pc}]+|[^\p{L}\p{M}\p{Nd}\p{Pc}\s]+)", Behavior::Removed,
                                        true, where);
  if (type == "WhitespaceSplit") return std::make_unique<RegexSplit>(R"(\s+)", Behavior::Removed, false, where);
  if (type == "Punctuation")
    return std::make_unique<RegexSplit>(R"([\p{P}!-/:-@\[-`{-~])",
                                        parse_behavior(get_string_or(j, "behavior", "Isolated", where), where), false,
                                        where);
  throw Error(ErrorCode::Unsupported,
              where + ": pre-tokenizer type \"" + type +
                  "\" is not supported (supported: Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, "
                  "WhitespaceSplit, Punctuation)");
}

}  // namespace inferdesk::tok
