#include "core/tokenizer/decoder.h"

#include <functional>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/json_util.h"
#include "core/tokenizer/utf8.h"

namespace inferdesk::tok {

// One streaming stage. Before a joining stage (Fuse, ByteLevel) every input is one whole token
// (`new_item` true); after it, inputs are fragments of a single text.
class DecoderStream::Stage {
 public:
  using Emit = std::function<void(std::string&&, bool new_item)>;
  virtual ~Stage() = default;
  virtual void input(std::string&& s, bool new_item, const Emit& emit) = 0;
  virtual void finish(const Emit&) {}
};

namespace {

using Stage = DecoderStream::Stage;
using Emit = Stage::Emit;

std::string replace_all(std::string_view s, std::string_view pat, std::string_view with) {
  std::string out;
  out.reserve(s.size());
  size_t prev = 0;
  for (size_t p = s.find(pat); p != std::string_view::npos; p = s.find(pat, prev)) {
    out.append(s.substr(prev, p - prev));
    out.append(with);
    prev = p + pat.size();
  }
  out.append(s.substr(prev));
  return out;
}

// "<0xHH>" -> byte (u8::from_str_radix semantics: two hex digits, or '+' and one digit).
int byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (t[3] == '+') return hex(t[4]);
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// ByteLevel: characters back to bytes; a token with an unmapped character keeps its UTF-8 bytes.
void byte_level_bytes(std::string_view token, std::string& bytes) {
  const size_t start = bytes.size();
  size_t i = 0;
  while (i < token.size()) {
    const int b = kByteLevel.char_to_byte(next_code_point(token, i));
    if (b < 0) {
      bytes.resize(start);
      bytes.append(token);
      return;
    }
    bytes.push_back(static_cast<char>(b));
  }
}

// Strips up to `start` leading and `stop` trailing `content` characters of one token.
std::string strip_token(std::string_view t, char32_t content, size_t start, size_t stop) {
  std::vector<std::pair<size_t, char32_t>> chars;  // (byte offset, char)
  for (size_t i = 0; i < t.size();) {
    const size_t at = i;
    chars.emplace_back(at, next_code_point(t, i));
  }
  size_t a = 0;
  while (a < start && a < chars.size() && chars[a].second == content) ++a;
  size_t b = chars.size();
  for (size_t k = 0; k < stop && b > a && chars[b - 1].second == content; ++k) --b;
  const size_t from = a < chars.size() ? chars[a].first : t.size();
  const size_t to = b < chars.size() ? chars[b].first : t.size();
  return std::string(t.substr(from, to - from));
}

// ---- streaming stages ----

class ReplaceItemStage final : public Stage {
 public:
  ReplaceItemStage(std::string pat, std::string with) : pat_(std::move(pat)), with_(std::move(with)) {}
  void input(std::string&& s, bool, const Emit& emit) override { emit(replace_all(s, pat_, with_), true); }

 private:
  std::string pat_, with_;
};

// Replace over a text stream: holds back a tail that may be the start of the pattern.
class ReplaceTextStage final : public Stage {
 public:
  ReplaceTextStage(std::string pat, std::string with) : pat_(std::move(pat)), with_(std::move(with)) {}
  void input(std::string&& s, bool new_item, const Emit& emit) override {
    if (new_item) first_ = true;
    carry_ += s;
    std::string out;
    size_t prev = 0;
    for (size_t p = carry_.find(pat_); p != std::string::npos; p = carry_.find(pat_, prev)) {
      out.append(carry_, prev, p - prev);
      out += with_;
      prev = p + pat_.size();
    }
    // Hold back the longest tail (after the last match) that may be the start of the pattern.
    size_t keep = 0;
    for (size_t k = std::min(pat_.size() - 1, carry_.size() - prev); k > 0; --k) {
      if (carry_.compare(carry_.size() - k, k, pat_, 0, k) == 0) {
        keep = k;
        break;
      }
    }
    out.append(carry_, prev, carry_.size() - prev - keep);
    carry_.erase(0, carry_.size() - keep);
    send(std::move(out), emit);
  }
  void finish(const Emit& emit) override {
    send(std::move(carry_), emit);
    carry_.clear();
  }

 private:
  void send(std::string&& s, const Emit& emit) {
    if (s.empty() && !first_) return;
    emit(std::move(s), first_);
    first_ = false;
  }
  std::string pat_, with_, carry_;
  bool first_ = true;
};

class ByteFallbackStage final : public Stage {
 public:
  void input(std::string&& s, bool, const Emit& emit) override {
    const int b = byte_token(s);
    if (b >= 0) {
      bytes_.push_back(static_cast<char>(b));
      return;
    }
    flush(emit);
    emit(std::move(s), true);
  }
  void finish(const Emit& emit) override { flush(emit); }

 private:
  void flush(const Emit& emit) {
    if (bytes_.empty()) return;
    if (is_valid_utf8(bytes_)) {
      emit(std::move(bytes_), true);
    } else {
      for (size_t i = 0; i < bytes_.size(); ++i) emit("\xEF\xBF\xBD", true);
    }
    bytes_.clear();
  }
  std::string bytes_;
};

class FuseStage final : public Stage {
 public:
  void input(std::string&& s, bool, const Emit& emit) override {
    emit(std::move(s), first_);
    first_ = false;
  }

 private:
  bool first_ = true;
};

class StripItemStage final : public Stage {
 public:
  StripItemStage(char32_t c, size_t start, size_t stop) : c_(c), start_(start), stop_(stop) {}
  void input(std::string&& s, bool, const Emit& emit) override { emit(strip_token(s, c_, start_, stop_), true); }

 private:
  char32_t c_;
  size_t start_, stop_;
};

// Strip over the single text after a join: drops up to `start` leading characters at the very
// beginning, and holds back trailing `content` characters (up to `stop`) until more text comes.
class StripTextStage final : public Stage {
 public:
  StripTextStage(char32_t c, size_t start, size_t stop) : c_(c), start_(start), stop_(stop) {}
  void input(std::string&& s, bool new_item, const Emit& emit) override {
    if (new_item) {
      stripped_ = 0;
      leading_done_ = false;
      first_ = true;
    }
    size_t i = 0;
    while (!leading_done_ && i < s.size()) {
      size_t j = i;
      if (stripped_ < start_ && next_code_point(s, j) == c_) {
        ++stripped_;
        i = j;
      } else {
        leading_done_ = true;
      }
    }
    held_.append(s, i, std::string::npos);
    // Emit all but a trailing run of at most `stop` content characters.
    size_t end = held_.size(), run = 0;
    while (run < stop_ && end > 0) {
      size_t start = end - 1;
      while (start > 0 && (static_cast<unsigned char>(held_[start]) & 0xC0) == 0x80) --start;
      size_t k = start;
      if (next_code_point(held_, k) != c_) break;
      end = start;
      ++run;
    }
    send(held_.substr(0, end), emit);
    held_.erase(0, end);
  }
  void finish(const Emit& emit) override {
    held_.clear();  // what is held is the stripped tail
    if (first_) send("", emit);
  }

 private:
  void send(std::string&& s, const Emit& emit) {
    if (s.empty() && !first_) return;
    emit(std::move(s), first_);
    first_ = false;
  }
  char32_t c_;
  size_t start_, stop_;
  size_t stripped_ = 0;
  bool leading_done_ = false;
  bool first_ = true;
  std::string held_;
};

class MetaspaceStage final : public Stage {
 public:
  MetaspaceStage(std::string rep, bool strip_first) : rep_(std::move(rep)), strip_first_(strip_first) {}
  void input(std::string&& s, bool, const Emit& emit) override {
    emit(replace_all(s, rep_, index_++ == 0 && strip_first_ ? "" : " "), true);
  }

 private:
  std::string rep_;
  bool strip_first_;
  size_t index_ = 0;
};

class ByteLevelStage final : public Stage {
 public:
  void input(std::string&& s, bool, const Emit& emit) override {
    bytes_.clear();
    byte_level_bytes(s, bytes_);
    std::string out;
    utf8_.feed(bytes_, out);
    send(std::move(out), emit);
  }
  void finish(const Emit& emit) override {
    std::string out;
    utf8_.finish(out);
    send(std::move(out), emit);
  }

 private:
  void send(std::string&& s, const Emit& emit) {
    if (s.empty() && !first_) return;
    emit(std::move(s), first_);
    first_ = false;
  }
  Utf8LossyStream utf8_;
  std::string bytes_;
  bool first_ = true;
};

// ---- batch decoders ----

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& t) const override {
    for (const auto& p : parts_) p->decode_chain(t);
  }
  bool add_stream_stage(DecoderStream& s) const override {
    for (const auto& p : parts_)
      if (!p->add_stream_stage(s)) return false;
    return true;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& t) const override {
    std::string bytes;
    for (const auto& tok : t) byte_level_bytes(tok, bytes);
    t.assign(1, utf8_lossy(bytes));
  }
  bool add_stream_stage(DecoderStream& s) const override {
    if (s.joined()) return false;
    s.add(std::make_unique<ByteLevelStage>());
    s.set_joined();
    return true;
  }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::string pat, std::string with) : pat_(std::move(pat)), with_(std::move(with)) {}
  void decode_chain(std::vector<std::string>& t) const override {
    for (auto& tok : t) tok = replace_all(tok, pat_, with_);
  }
  bool add_stream_stage(DecoderStream& s) const override {
    if (s.joined())
      s.add(std::make_unique<ReplaceTextStage>(pat_, with_));
    else
      s.add(std::make_unique<ReplaceItemStage>(pat_, with_));
    return true;
  }

 private:
  std::string pat_, with_;
};

class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& t) const override {
    std::vector<std::string> out;
    out.reserve(t.size());
    std::string bytes;
    auto flush = [&] {
      if (bytes.empty()) return;
      if (is_valid_utf8(bytes))
        out.push_back(bytes);
      else
        out.insert(out.end(), bytes.size(), "\xEF\xBF\xBD");
      bytes.clear();
    };
    for (auto& tok : t) {
      const int b = byte_token(tok);
      if (b >= 0) {
        bytes.push_back(static_cast<char>(b));
        continue;
      }
      flush();
      out.push_back(std::move(tok));
    }
    flush();
    t.swap(out);
  }
  bool add_stream_stage(DecoderStream& s) const override {
    if (s.joined()) return false;
    s.add(std::make_unique<ByteFallbackStage>());
    return true;
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& t) const override {
    std::string all;
    for (const auto& tok : t) all += tok;
    t.assign(1, std::move(all));
  }
  bool add_stream_stage(DecoderStream& s) const override {
    if (!s.joined()) {
      s.add(std::make_unique<FuseStage>());
      s.set_joined();
    }
    return true;
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t c, size_t start, size_t stop) : c_(c), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& t) const override {
    for (auto& tok : t) tok = strip_token(tok, c_, start_, stop_);
  }
  bool add_stream_stage(DecoderStream& s) const override {
    if (s.joined())
      s.add(std::make_unique<StripTextStage>(c_, start_, stop_));
    else
      s.add(std::make_unique<StripItemStage>(c_, start_, stop_));
    return true;
  }

 private:
  char32_t c_;
  size_t start_, stop_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string rep, bool strip_first) : rep_(std::move(rep)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& t) const override {
    for (size_t i = 0; i < t.size(); ++i) t[i] = replace_all(t[i], rep_, i == 0 && strip_first_ ? "" : " ");
  }
  bool add_stream_stage(DecoderStream& s) const override {
    if (s.joined()) return false;
    s.add(std::make_unique<MetaspaceStage>(rep_, strip_first_));
    return true;
  }

 private:
  std::string rep_;
  bool strip_first_;
};

char32_t single_char(const std::string& s, const std::string& where) {
  size_t i = 0;
  if (s.empty() || !is_valid_utf8(s)) fail(where, "expected a single character");
  const char32_t c = next_code_point(s, i);
  if (i != s.size()) fail(where, "expected a single character");
  return c;
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = stage_type(j, where);
  if (type == "Sequence") {
    const auto& list = member(j, "decoders", where);
    if (!list.is_array()) fail(where + ".decoders", "expected an array");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto d = make_decoder(list[i], where + ".decoders[" + std::to_string(i) + "]");
      if (d) parts.push_back(std::move(d));
    }
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Replace") {
    const PatternSpec p = get_pattern(j, where);
    if (p.is_regex || p.text.empty())
      throw Error(ErrorCode::Unsupported, where + ": Replace decoder needs a non-empty String pattern");
    return std::make_unique<ReplaceDecoder>(p.text, get_string(j, "content", where));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    const std::string c = get_string(j, "content", where);
    return std::make_unique<StripDecoder>(single_char(c, where + ".content"),
                                          static_cast<size_t>(get_int_or(j, "start", 0, 0, 1 << 20, where)),
                                          static_cast<size_t>(get_int_or(j, "stop", 0, 0, 1 << 20, where)));
  }
  if (type == "Metaspace") {
    const std::string rep = get_string_or(j, "replacement", "\xE2\x96\x81", where);
    single_char(rep, where + ".replacement");
    bool strip_first = get_bool_or(j, "add_prefix_space", true, where);
    if (j.contains("prepend_scheme")) strip_first = get_string(j, "prepend_scheme", where) != "never";
    return std::make_unique<MetaspaceDecoder>(rep, strip_first);
  }
  throw Error(
      ErrorCode::Unsupported,
      where + ": decoder type \"" + type +
          "\" is not supported (supported: Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace)");
}

std::unique_ptr<Decoder> make_llama_decoder(bool add_prefix_space) {
  std::vector<std::unique_ptr<Decoder>> parts;
  parts.push_back(std::make_unique<ReplaceDecoder>("\xE2\x96\x81", " "));
  parts.push_back(std::make_unique<ByteFallbackDecoder>());
  parts.push_back(std::make_unique<FuseDecoder>());
  if (add_prefix_space) parts.push_back(std::make_unique<StripDecoder>(U' ', 1, 0));
  return std::make_unique<SequenceDecoder>(std::move(parts));
}

std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevelDecoder>(); }

std::string run_decoder(const Decoder* decoder, std::vector<std::string> tokens) {
  std::string out;
  if (!decoder) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) out += ' ';
      out += tokens[i];
    }
    return out;
  }
  decoder->decode_chain(tokens);
  for (const auto& t : tokens) out += t;
  return out;
}

DecoderStream::DecoderStream(const Decoder* decoder) : have_decoder_(decoder != nullptr) {
  if (decoder) supported_ = decoder->add_stream_stage(*this);
}

DecoderStream::~DecoderStream() = default;

void DecoderStream::add(std::unique_ptr<Stage> stage) { stages_.push_back(std::move(stage)); }

namespace {
// Runs `s` through stages[i..] and appends what comes out to `out`.
void run_from(std::vector<std::unique_ptr<Stage>>& stages, size_t i, std::string&& s, bool new_item, std::string& out) {
  if (i == stages.size()) {
    out += s;
    return;
  }
  stages[i]->input(std::move(s), new_item,
                   [&](std::string&& o, bool n) { run_from(stages, i + 1, std::move(o), n, out); });
}
}  // namespace

void DecoderStream::push(std::string token, std::string& out) {
  if (!have_decoder_) {
    if (!first_token_) out += ' ';
    out += token;
    first_token_ = false;
    return;
  }
  run_from(stages_, 0, std::move(token), true, out);
}

void DecoderStream::finish(std::string& out) {
  for (size_t i = 0; i < stages_.size(); ++i)
    stages_[i]->finish([&](std::string&& o, bool n) { run_from(stages_, i + 1, std::move(o), n, out); });
}

}  // namespace inferdesk::tok
