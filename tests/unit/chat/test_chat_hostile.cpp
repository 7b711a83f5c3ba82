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

TemplateError render_error(const std::string& source, const RenderLimits& limits = {}) {
  const ChatTemplate tpl = ChatTemplate::parse(source, "t.jinja");
  try {
    tpl.render(Json::object(), limits);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a render error for: " << source.substr(0, 200);
  return TemplateError(TemplateError::Kind::Runtime, "", 0, 0, "");
}

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

TEST(ChatHostile, SelfDoublingMacroHitsTheWorkLimit) {
  // Depth 60 < 64, no loops, empty output: only a budget on total work stops it (2^60 calls).
  const auto start = Clock::now();
  const TemplateError e = render_error(
      "{% macro f(n) %}{% if n < 60 %}{{ f(n+1) }}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
  EXPECT_NE(std::string(e.what()).find("work limit"), std::string::npos) << e.what();
  EXPECT_LT(Clock::now() - start, kBackstop);
}

// Each of these stays under the size, loop and depth limits but does quadratic or exponential work.
TEST(ChatHostile, SuperLinearTemplatesHitALimit) {
  const char* const cases[] = {
      // a 30 MB string copied 100 000 times
      "{% set x = 'a' * 30000000 %}{% for i in range(100000) %}{% set y = x %}{% endfor %}",
      // a string grown by concatenation in a loop (quadratic copying)
      "{% set ns = namespace(s='') %}{% for i in range(99999) %}{% set ns.s = ns.s ~ "
      "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' %}{% endfor %}{{ ns.s | length }}",
      // a filter over a 30 MB string, 10 000 times
      "{% set s = 'a' * 30000000 %}{% for i in range(10000) %}{% set t = s | upper %}{% endfor %}",
      // a 100 000-item list copied, concatenated, sorted and searched 100 000 times
      "{% set l = range(99999) | list %}{% for i in range(99999) %}{% set m = l | list %}{% endfor %}",
      "{% set l = range(99999) | list %}{% for i in range(99999) %}{% set m = l + [1] %}{% endfor %}",
      "{% set l = range(99999) | list %}{% for i in range(1000) %}{% set m = l | sort(reverse=true) %}{% endfor %}",
      "{% set l = range(99999) | list %}{% for i in range(99999) %}{% if -1 in l %}{% endif %}{% endfor %}",
      // lists that share their halves: 2^60 leaves behind 60 small objects
      "{% set ns = namespace(x=[0], y=[0]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}"
      "{% set ns.y = [ns.y, ns.y] %}{% endfor %}{{ ns.x == ns.y }}",
      "{% set ns = namespace(x=[0]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}"
      "{{ ns.x | tojson | length }}",
      // a 1 MB string repeated into a million-item list (1 TB of copies)
      "{% set x = 'a' * 1000000 %}{% set l = [x] * 1000000 %}{{ l | length }}",
      // a loop over every character of a 30 MB string
      "{% set s = 'a' * 30000000 %}{% for c in s %}{% endfor %}",
      // lists of 19M and 10M items (a Value is tens of bytes: gigabytes)
      "{{ ([0] * 19000000) | length }}",
      "{{ ([0] * 5000000 + [1] * 5000000) | length }}",
      "{% for c in 'a' * 5000000 %}{% endfor %}",
      // 10M-item results of split (a 20 MB string of separators)
      "{{ ('a b ' * 5000000).split() | length }}",
      "{{ ('a,' * 10000000).rsplit(',') | length }}",
      "{{ ('a\n' * 10000000).splitlines() | length }}",
  };
  for (const char* source : cases) {
    const auto start = Clock::now();
    const TemplateError e = render_error(source);
    EXPECT_EQ(e.kind(), TemplateError::Kind::Limit) << source << "\n" << e.what();
    EXPECT_LT(Clock::now() - start, kBackstop) << source;
  }
}

TEST(ChatHostile, WorkLimitIsAnOptionAndCountsSteps) {
  const ChatTemplate tpl = ChatTemplate::parse("{% for i in range(1000) %}{{ i }}{% endfor %}");
  RenderOptions options;
  RenderStats stats;
  options.stats = &stats;
  EXPECT_EQ(tpl.render(Json::object(), options).size(), 2890u);
  const uint64_t needed = stats.work_steps;
  EXPECT_GT(needed, 2000u);  // 1000 iterations, each an output statement and its expression
  EXPECT_LT(needed, 10000u);
  options.limits.max_work_steps = needed;  // exactly enough
  EXPECT_NO_THROW(tpl.render(Json::object(), options));
  options.limits.max_work_steps = needed - 1;
  try {
    tpl.render(Json::object(), options);
    FAIL() << "expected a limit error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
    EXPECT_NE(e.detail().find("work limit of " + std::to_string(needed - 1) + " steps"), std::string::npos) << e.what();
    EXPECT_EQ(stats.work_steps, needed);  // reported also when the render fails
  }
}

// Substring search with a long needle is linear: std::string_view::find is O(n * m) at worst.
TEST(ChatHostile, LongNeedleSearchIsLinear) {
  const auto start = Clock::now();
  const ChatTemplate tpl = ChatTemplate::parse(
      "{% set hay = 'a' * 3000000 %}{% set needle = 'a' * 100000 ~ 'b' %}{% set back = 'b' ~ 'a' * 100000 %}"
      "{{ needle in hay }} {{ hay.count(needle) }} {{ hay.split(needle) | length }} {{ hay.find(needle) }} "
      "{{ hay.rfind(back) }} {{ hay.rsplit(back, 1) | length }} {{ hay.replace(needle, 'x') | length }} "
      "{{ hay.partition(needle)[1] == '' }} {{ (hay ~ needle).rfind(needle) }}");
  EXPECT_EQ(tpl.render(Json::object()), "False 0 1 -1 -1 1 3000000 True 3000000");
  EXPECT_LT(Clock::now() - start, kBackstop);
}

}  // namespace
}  // namespace inferdesk::chat
