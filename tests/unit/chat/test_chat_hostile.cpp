// Hostile templates end in a typed error within a bounded time and memory: a long one-line template
// lexes in linear time, and the work budget stops templates whose cost grows faster than their size
// (self-doubling macros, quadratic concatenation, repeated copies of big values).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/chat/chat_template.h"

namespace inferdesk::chat {
namespace {

using Clock = std::chrono::steady_clock;

// Only a backstop: the fixed code takes well under a second, the unfixed one minutes or forever.
constexpr auto kBackstop = std::chrono::seconds(20);

std::string repeat(std::string_view unit, size_t times) {
  std::string s;
  s.reserve(unit.size() * times);
  for (size_t i = 0; i < times; ++i) s += unit;
  return s;
}

TEST(ChatHostile, LongOneLineTemplateLexesInLinearTime) {
  const auto start = Clock::now();
  // 200 000 tags on one line, then a syntax error: its column is still exact.
  try {
    ChatTemplate::parse(repeat("{{ x }}", 200000) + "{{ 1 + }}", "t.jinja");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
    EXPECT_EQ(e.line(), 1u);
    EXPECT_EQ(e.column(), 7u * 200000 + 8);
  }
  // Columns count code points, also far along a line; later lines restart at column 1.
  try {
    ChatTemplate::parse(repeat("\xC3\xA9{{ x }}", 50000) + "\n\xC3\xA9{{ 1 + }}", "t.jinja");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 2u);
    EXPECT_EQ(e.column(), 9u);
  }
  // A 2.4 MB one-line dict literal (reachable from a model folder's tokenizer_config.json).
  std::string dict = "{{ {";
  for (int i = 0; i < 200000; ++i) dict += (i ? ", 'k" : "'k") + std::to_string(i) + "': " + std::to_string(i);
  dict += "} | length }}";
  EXPECT_EQ(ChatTemplate::parse(dict).render(Json::object()), "200000");
  EXPECT_LT(Clock::now() - start, kBackstop);
}

TEST(ChatHostile, ErrorsBeforeTheLastTokenKeepTheirColumn) {
  // An unterminated raw block is reported at its start, behind tokens already placed.
  try {
    ChatTemplate::parse("ab\ncd {{ x }} {% raw %} {{ y }}", "t.jinja");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 2u);
    EXPECT_EQ(e.column(), 12u);
  }
}

}  // namespace
}  // namespace inferdesk::chat
