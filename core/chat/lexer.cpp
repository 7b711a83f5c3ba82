#include "core/chat/lexer.h"

#include <charconv>

#include "core/chat/pystr.h"

namespace inferdesk::chat {

std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string describe(const Token& t) {
  switch (t.type) {
    case TokType::Eof: return "end of template";
    case TokType::VarEnd: return "end of print statement";
    case TokType::BlockEnd: return "end of statement block";
    case TokType::VarBegin: return "begin of print statement";
    case TokType::BlockBegin: return "begin of statement block";
    case TokType::Data: return "template data";
    case TokType::String: return "string literal";
    case TokType::Integer: return "integer";
    case TokType::Float: return "float";
    case TokType::Name:
    case TokType::Op: return "'" + t.text + "'";
  }
  return "token";
}

namespace {

bool is_digit_ascii(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit_ascii(c); }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      if (tag == std::string_view::npos) {
        emit_data(pos_, src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      const char kind = src_[tag + 1];
      size_t after = tag + 2;
      char sign = 0;
      if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
      size_t raw_body = 0;
      const bool is_raw = kind == '%' && match_raw_begin(after, &raw_body);
      emit_data(pos_, lstrip(src_.substr(pos_, tag - pos_), sign, kind != '{', line_starting_));
      if (is_raw) {
        lex_raw(tag, raw_body);
      } else if (kind == '#') {
        lex_comment(tag, after);
      } else {
        lex_tag(kind, tag, after);
      }
    }
    Token eof;
    eof.type = TokType::Eof;
    set_pos(eof, src_.size());
    out_.push_back(std::move(eof));
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& message, size_t offset) {
    Token t;
    set_pos(t, offset);
    throw SyntaxError(message, t.line, t.col);
  }

  // Tokens are placed in source order, so line and column advance from the previous token: linear
  // in the source however long its lines (recounting from the line start was quadratic).
  void set_pos(Token& t, size_t offset) {
    if (offset < cursor_.offset) cursor_ = {};  // only an error can point back; recount from the start
    for (size_t i = cursor_.offset; i < offset; ++i) {
      const auto b = static_cast<unsigned char>(src_[i]);
      if (b == '\n') {
        ++cursor_.line;
        cursor_.col = 1;
      } else if ((b & 0xC0) != 0x80) {  // a code point starts here
        ++cursor_.col;
      }
    }
    cursor_.offset = offset;
    t.line = cursor_.line;
    t.col = cursor_.col;
  }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string_view::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string_view::npos;
  }

  // Skips Unicode whitespace (regex \s) from pos.
  size_t skip_ws(size_t pos) const {
    while (pos < src_.size()) {
      size_t next = pos;
      const char32_t c = py::next_cp(src_, next);
      if (!py::is_space(c)) break;
      pos = next;
    }
    return pos;
  }

  bool all_ws(std::string_view s) const {
    if (s.empty()) return false;
    for (size_t p = 0; p < s.size();) {
      if (!py::is_space(py::next_cp(s, p))) return false;
    }
    return true;
  }

  std::string_view rstrip_ws(std::string_view s) const {
    // Find the end of the last non-whitespace code point.
    size_t keep = 0;
    for (size_t p = 0; p < s.size();) {
      const char32_t c = py::next_cp(s, p);
      if (!py::is_space(c)) keep = p;
    }
    return s.substr(0, keep);
  }

  // jinja2's OptionalLStrip: "-" strips all whitespace before the tag; otherwise lstrip_blocks strips
  // spaces between the line start and a block or comment tag.
  std::string_view lstrip(std::string_view text, char sign, bool is_block_like, bool line_starting) const {
    if (sign == '-') return rstrip_ws(text);
    if (sign != '+' && is_block_like) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting) && all_ws(text.substr(l_pos))) return text.substr(0, l_pos);
    }
    return text;
  }

  void emit_data(size_t offset, std::string_view text) {
    if (text.empty()) return;
    Token t;
    t.type = TokType::Data;
    t.text.assign(text);
    set_pos(t, offset);
    out_.push_back(std::move(t));
  }

  bool match_word(size_t& pos, std::string_view word) const {
    if (src_.substr(pos, word.size()) != word) return false;
    const size_t end = pos + word.size();
    if (end < src_.size() && is_name_char(src_[end])) return false;
    pos = end;
    return true;
  }

  // {% raw %} / {%- raw -%}: sets *body to the offset after the tag.
  bool match_raw_begin(size_t after_sign, size_t* body) const {
    size_t p = skip_ws(after_sign);
    if (src_.substr(p, 3) != "raw") return false;
    p = skip_ws(p + 3);
    if (src_.substr(p, 3) == "-%}") {
      *body = skip_ws(p + 3);
      return true;
    }
    if (src_.substr(p, 2) == "%}") {
      *body = p + 2;
      return true;
    }
    return false;
  }

  void lex_raw(size_t tag, size_t body) {
    const bool starting = body > 0 && src_[body - 1] == '\n';
    for (size_t i = src_.find("{%", body); i != std::string_view::npos; i = src_.find("{%", i + 1)) {
      size_t p = i + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      p = skip_ws(p);
      if (src_.substr(p, 6) != "endraw") continue;
      p = skip_ws(p + 6);
      size_t end;
      if (src_.substr(p, 3) == "+%}") {
        end = p + 3;
      } else if (src_.substr(p, 3) == "-%}") {
        end = skip_ws(p + 3);
      } else if (src_.substr(p, 2) == "%}") {
        end = p + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      emit_data(body, lstrip(src_.substr(body, i - body), sign, true, starting));
      pos_ = end;
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    fail("Missing end of raw directive", tag);
  }

  void lex_comment(size_t tag, size_t content) {
    const size_t hit = src_.find("#}", content);
    if (hit == std::string_view::npos) fail("Missing end of comment tag", tag);
    size_t end = hit + 2;
    const char before = hit > content ? src_[hit - 1] : 0;
    if (before == '-') {
      end = skip_ws(end);
    } else if (before != '+' && end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    pos_ = end;
    line_starting_ = src_[end - 1] == '\n';
  }

  // Tries the end of the current tag at pos_; true when the tag ended.
  bool try_tag_end(char kind) {
    if (kind == '%') {
      if (src_.substr(pos_, 3) == "+%}") {
        pos_ += 3;
      } else if (src_.substr(pos_, 3) == "-%}") {
        pos_ = skip_ws(pos_ + 3);
      } else if (src_.substr(pos_, 2) == "%}") {
        pos_ += 2;
        if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
      } else {
        return false;
      }
    } else {
      if (src_.substr(pos_, 3) == "-}}") {
        pos_ = skip_ws(pos_ + 3);
      } else if (src_.substr(pos_, 2) == "}}") {
        pos_ += 2;
      } else {
        return false;
      }
    }
    return true;
  }

  void lex_tag(char kind, size_t tag, size_t after) {
    Token begin;
    begin.type = kind == '%' ? TokType::BlockBegin : TokType::VarBegin;
    set_pos(begin, tag);
    out_.push_back(std::move(begin));
    pos_ = after;
    std::vector<char> balance;
    while (true) {
      pos_ = skip_ws(pos_);
      if (pos_ >= src_.size()) {
        fail(kind == '%' ? "unexpected end of template, expected end of statement block"
                         : "unexpected end of template, expected end of print statement",
             pos_);
      }
      const size_t start = pos_;
      if (balance.empty() && try_tag_end(kind)) {
        Token end;
        end.type = kind == '%' ? TokType::BlockEnd : TokType::VarEnd;
        set_pos(end, start);
        out_.push_back(std::move(end));
        line_starting_ = src_[pos_ - 1] == '\n';
        return;
      }
      lex_one(balance);
    }
  }

  void lex_one(std::vector<char>& balance) {
    const char c = src_[pos_];
    if (is_digit_ascii(c)) return lex_number();
    if (is_name_start(c)) {
      size_t e = pos_;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      Token t;
      t.type = TokType::Name;
      t.text.assign(src_.substr(pos_, e - pos_));
      set_pos(t, pos_);
      out_.push_back(std::move(t));
      pos_ = e;
      return;
    }
    if (c == '\'' || c == '"') return lex_string();
    lex_operator(balance);
  }

  void lex_operator(std::vector<char>& balance) {
    static constexpr struct {
      const char* text;
      OpKind op;
    } kOps[] = {
        {"//", OpKind::FloorDiv}, {"**", OpKind::Pow},      {"==", OpKind::Eq},    {"!=", OpKind::Ne},
        {">=", OpKind::Ge},       {"<=", OpKind::Le},       {"+", OpKind::Add},    {"-", OpKind::Sub},
        {"/", OpKind::Div},       {"*", OpKind::Mul},       {"%", OpKind::Mod},    {"~", OpKind::Tilde},
        {"[", OpKind::LBracket},  {"]", OpKind::RBracket},  {"(", OpKind::LParen}, {")", OpKind::RParen},
        {"{", OpKind::LBrace},    {"}", OpKind::RBrace},    {">", OpKind::Gt},     {"<", OpKind::Lt},
        {"=", OpKind::Assign},    {".", OpKind::Dot},       {":", OpKind::Colon},  {"|", OpKind::Pipe},
        {",", OpKind::Comma},     {";", OpKind::Semicolon},
    };
    for (const auto& o : kOps) {
      const std::string_view text(o.text);
      if (src_.substr(pos_, text.size()) != text) continue;
      if (o.op == OpKind::LParen || o.op == OpKind::LBracket || o.op == OpKind::LBrace) {
        balance.push_back(text[0]);
      } else if (o.op == OpKind::RParen || o.op == OpKind::RBracket || o.op == OpKind::RBrace) {
        const char open = text[0] == ')' ? '(' : (text[0] == ']' ? '[' : '{');
        if (balance.empty()) fail("unexpected '" + std::string(text) + "'", pos_);
        if (balance.back() != open) {
          const char want = balance.back() == '(' ? ')' : (balance.back() == '[' ? ']' : '}');
          fail("unexpected '" + std::string(text) + "', expected '" + std::string(1, want) + "'", pos_);
        }
        balance.pop_back();
      }
      Token t;
      t.type = TokType::Op;
      t.op = o.op;
      t.text.assign(text);
      set_pos(t, pos_);
      out_.push_back(std::move(t));
      pos_ += text.size();
      return;
    }
    size_t next = pos_;
    std::string ch;
    py::append_utf8(ch, py::next_cp(src_, next));
    fail("unexpected char '" + ch + "'", pos_);
  }

  // digits with single underscores between them, from p; returns the end (p when none).
  size_t scan_digits(size_t p) const {
    if (p >= src_.size() || !is_digit_ascii(src_[p])) return p;
    size_t e = p + 1;
    while (e < src_.size()) {
      if (is_digit_ascii(src_[e])) {
        ++e;
      } else if (src_[e] == '_' && e + 1 < src_.size() && is_digit_ascii(src_[e + 1])) {
        e += 2;
      } else {
        break;
      }
    }
    return e;
  }

  void lex_number() {
    Token t;
    set_pos(t, pos_);
    const size_t int_end = scan_digits(pos_);
    size_t float_end = 0;
    if (!(pos_ > 0 && src_[pos_ - 1] == '.')) {
      size_t p = int_end;
      bool frac = false;
      if (p + 1 < src_.size() && src_[p] == '.' && is_digit_ascii(src_[p + 1])) {
        p = scan_digits(p + 1);
        frac = true;
      }
      if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
        size_t q = p + 1;
        if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
        const size_t e = scan_digits(q);
        if (e > q) float_end = e;
      }
      if (!float_end && frac) float_end = p;
    }
    if (float_end) {
      std::string clean;
      for (char c : src_.substr(pos_, float_end - pos_)) {
        if (c != '_') clean.push_back(c);
      }
      t.type = TokType::Float;
      std::from_chars(clean.data(), clean.data() + clean.size(), t.fval);
      t.text = clean;
      pos_ = float_end;
      out_.push_back(std::move(t));
      return;
    }
    lex_integer(std::move(t));
  }

  void lex_integer(Token t) {
    int base = 10;
    size_t p = pos_;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      const char b = static_cast<char>(src_[p + 1] | 0x20);
      base = b == 'x' ? 16 : (b == 'o' ? 8 : (b == 'b' ? 2 : 10));
    }
    std::string digits;
    size_t e = p;
    if (base != 10) {
      auto valid = [&](char ch) {
        const char low = static_cast<char>(ch | 0x20);
        return base == 16 ? (is_digit_ascii(ch) || (low >= 'a' && low <= 'f'))
                          : (ch >= '0' && ch < static_cast<char>('0' + base));
      };
      e = p + 2;
      while (e < src_.size()) {
        if (valid(src_[e])) {
          digits.push_back(src_[e++]);
        } else if (src_[e] == '_' && e + 1 < src_.size() && valid(src_[e + 1])) {
          ++e;
        } else {
          break;
        }
      }
      if (digits.empty()) {
        base = 10;
        e = p;
      }
    }
    if (base == 10) {
      if (src_[p] == '0') {  // 0(_?0)*
        e = p + 1;
        while (e < src_.size() && (src_[e] == '0' || (src_[e] == '_' && e + 1 < src_.size() && src_[e + 1] == '0')))
          ++e;
        digits = "0";
      } else {
        e = scan_digits(p);
        for (char c : src_.substr(p, e - p)) {
          if (c != '_') digits.push_back(c);
        }
      }
    }
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), t.ival, base);
    if (res.ec != std::errc()) fail("integer literal too large", pos_);
    t.type = TokType::Integer;
    t.text.assign(src_.substr(pos_, e - pos_));
    pos_ = e;
    out_.push_back(std::move(t));
  }

  void lex_string() {
    const char quote = src_[pos_];
    size_t e = pos_ + 1;
    while (e < src_.size() && src_[e] != quote) e += src_[e] == '\\' ? 2 : 1;
    if (e >= src_.size()) fail("unexpected char '" + std::string(1, quote) + "' (unterminated string)", pos_);
    Token t;
    t.type = TokType::String;
    set_pos(t, pos_);
    t.text = unescape(src_.substr(pos_ + 1, e - pos_ - 1), pos_);
    out_.push_back(std::move(t));
    pos_ = e + 1;
  }

  int hex_value(char c) const {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(c | 0x20);
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
  }

  // Python's "unicode_escape" decoding of a string literal body.
  std::string unescape(std::string_view s, size_t offset) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out.push_back(s[i]);
        continue;
      }
      const char c = s[++i];
      switch (c) {
        case '\n': break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'v': out.push_back('\v'); break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = c == 'x' ? 2 : (c == 'u' ? 4 : 8);
          char32_t cp = 0;
          for (size_t k = 1; k <= n; ++k) {
            const int h = i + k < s.size() ? hex_value(s[i + k]) : -1;
            if (h < 0) fail("truncated \\" + std::string(1, c) + " escape in string literal", offset);
            cp = cp * 16 + static_cast<char32_t>(h);
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            fail("illegal Unicode character in string literal", offset);
          py::append_utf8(out, cp);
          i += n;
          break;
        }
        case 'N': fail("\\N{...} escapes are not supported in string literals", offset);
        default:
          if (c >= '0' && c <= '7') {
            char32_t cp = static_cast<char32_t>(c - '0');
            for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k) {
              cp = cp * 8 + static_cast<char32_t>(s[++i] - '0');
            }
            py::append_utf8(out, cp);
          } else {
            out.push_back('\\');
            out.push_back(c);
          }
      }
    }
    return out;
  }

  std::string_view src_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  struct Cursor {
    size_t offset = 0;
    uint32_t line = 1, col = 1;
  } cursor_;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> lex(std::string_view source) { return Lexer(source).run(); }

}  // namespace inferdesk::chat
