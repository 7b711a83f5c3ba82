#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/tokenizer/regex.h"

#include <pcre2.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>

#include "core/tokenizer/utf8.h"
#include "core/util/error.h"

namespace inferdesk::tok {
namespace {

// Unicode White_Space, which is what Oniguruma's \s matches.
constexpr std::string_view kSpaceMembers =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
    "\\x{202F}\\x{205F}\\x{3000}";

}  // namespace

std::string translate_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 's') {
        if (in_class) {
          out += kSpaceMembers;
        } else {
          out += "[";
          out += kSpaceMembers;
          out += "]";
        }
        ++i;
        continue;
      }
      if (n == 'S' && !in_class) {
        out += "[^";
        out += kSpaceMembers;
        out += "]";
        ++i;
        continue;
      }
      out += c;
      out += n;
      ++i;
      continue;
    }
    if (in_class) {
      if (c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class [:name:]
        const size_t end = p.find(":]", i + 2);
        if (end != std::string_view::npos) {
          out.append(p.substr(i, end + 2 - i));
          i = end + 1;
          continue;
        }
      }
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      // A ']' (or '^]') right after the opening bracket is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out += '^';
        ++i;
      }
      if (i + 1 < p.size() && p[i + 1] == ']') {
        out += ']';
        ++i;
      }
      continue;
    }
    out += c;
  }
  return out;
}

std::string quote_literal(std::string_view literal) {
  std::string out;
  for (size_t i = 0; i < literal.size();) {
    const auto b = static_cast<unsigned char>(literal[i]);
    if (b < 0x80) {
      if (std::isalnum(b) || b == ' ' || b == '_') {
        out += static_cast<char>(b);
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x{%X}", b);
        out += buf;
      }
      ++i;
    } else {
      out += literal[i++];  // multi-byte characters are literal in PCRE2 UTF mode
    }
  }
  return out;
}

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  std::string where;    // "<file>: pre_tokenizer.pattern", for match-time errors
  std::string pattern;  // as the file spells it
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(std::string_view pattern, const std::string& where) : impl_(std::make_unique<Impl>()) {
  impl_->where = where;
  impl_->pattern = pattern;
  const std::string translated = translate_pattern(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(ErrorCode::Tokenizer, where + ": regex does not compile at offset " + std::to_string(offset) + ": " +
                                          reinterpret_cast<char*>(msg));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;

Error Regex::match_error(int rc, const std::string& pcre_message) const {
  // Quote the pattern (JSON-escaped, as in the file), cut where a message line would become unreadable.
  constexpr size_t kMaxShown = 200;
  std::string shown = nlohmann::json(impl_->pattern).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (shown.size() > kMaxShown) {
    size_t cut = kMaxShown;
    while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;  // whole code points
    shown = shown.substr(0, cut) + "...\" (" + std::to_string(impl_->pattern.size()) + " bytes)";
  }
  std::string advice = ": the pattern is malformed or backtracks catastrophically on this text";
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) {
    advice = ": the pattern backtracks catastrophically on this text (nested repeats such as (a+)+)";
  }
  return Error(ErrorCode::Tokenizer, impl_->where + ": regex " + shown + " failed: " + pcre_message + advice +
                                         "; replace the pattern in the tokenizer.json with the one from the "
                                         "model's original repository, or one without nested repeats");
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  if (!md) throw Error(ErrorCode::OutOfMemory, "tokenizer regex: cannot allocate match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  uint32_t flags = 0;
  while (pos <= text.size()) {
    int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos, flags, md, nullptr)
                        : PCRE2_ERROR_JIT_STACKLIMIT;
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // no JIT, or its stack is too small: interpreter
      rc = pcre2_match(impl_->code, subject, text.size(), pos, flags | PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (flags == 0) break;
      // An empty match was found here before: move on by one character.
      flags = 0;
      if (pos >= text.size()) break;
      pos += utf8_seq_len(static_cast<unsigned char>(text[pos]));
      continue;
    }
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw match_error(rc, reinterpret_cast<char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    out.emplace_back(ov[0], ov[1]);
    pos = ov[1];
    flags = ov[0] == ov[1] ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
  }
  pcre2_match_data_free(md);
}

}  // namespace inferdesk::tok
