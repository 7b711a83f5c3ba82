// Template errors carry line:column and a kind; limits stop runaway templates with an error instead
// of a crash or a hang; hostile input (deep nesting, huge repeats, self-referencing objects) is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/chat/chat_template.h"

namespace inferdesk::chat {
namespace {

TemplateError parse_error(const std::string& source) {
  try {
    ChatTemplate::parse(source, "t.jinja");
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a syntax error for: " << source;
  return TemplateError(TemplateError::Kind::Syntax, "", 0, 0, "");
}

TemplateError render_error(const std::string& source, const Json& context = Json::object(), RenderLimits limits = {}) {
  const ChatTemplate tpl = ChatTemplate::parse(source, "t.jinja");
  try {
    tpl.render(context, limits);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a render error for: " << source;
  return TemplateError(TemplateError::Kind::Runtime, "", 0, 0, "");
}

TEST(ChatErrors, SyntaxErrorsHaveLineAndColumn) {
  TemplateError e = parse_error("line one\n  {{ 1 + }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(e.code(), ErrorCode::Template);
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.column(), 10u);  // the "}}" where an operand was expected
  EXPECT_EQ(std::string(e.what()).rfind("t.jinja:2:10: ", 0), 0u) << e.what();

  e = parse_error("{% if x %}\nunclosed");
  EXPECT_NE(std::string(e.what()).find("endif"), std::string::npos) << e.what();

  e = parse_error("ok\n\n{% do x %}");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_NE(std::string(e.what()).find("unknown tag 'do'"), std::string::npos) << e.what();

  e = parse_error("{{ x | no_such_filter }}");
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.column(), 8u);

  e = parse_error("{{ 'unterminated }}");
  EXPECT_EQ(e.column(), 4u);
  e = parse_error("{# never closed");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  e = parse_error("{{ (1 }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  e = parse_error("{% for x in y %}{% endif %}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  e = parse_error("{% break %}");
  EXPECT_NE(std::string(e.what()).find("outside loop"), std::string::npos);
}

TEST(ChatErrors, ColumnsCountCodePoints) {
  const TemplateError e = parse_error("héllo wörld {{ ) }}");
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.column(), 16u);
}

TEST(ChatErrors, RuntimeErrorsPointAtTheFailingExpression) {
  TemplateError e = render_error("a\nb {{ 'x' + 1 }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.column(), 10u);  // the "+"
  EXPECT_NE(std::string(e.what()).find("can only concatenate str"), std::string::npos) << e.what();

  e = render_error("{% for m in messages %}\n  {{ m.content.strip() }}\n{% endfor %}",
                   Json{{"messages", Json::array({Json{{"role", "user"}}})}});
  EXPECT_EQ(e.line(), 2u);
  EXPECT_NE(std::string(e.what()).find("UndefinedError"), std::string::npos) << e.what();

  e = render_error("{% set l = [] %}{{ l.append(1) }}");
  EXPECT_NE(std::string(e.what()).find("SecurityError"), std::string::npos) << e.what();
  EXPECT_EQ(e.column(), 20u);
}

TEST(ChatErrors, RaiseExceptionKeepsTheTemplatesMessage) {
  const TemplateError e = render_error("{{ raise_exception('Conversation roles must alternate!') }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Raised);
  EXPECT_EQ(e.detail(), "Conversation roles must alternate!");
  EXPECT_EQ(std::string(e.what()), "t.jinja:1:4: Conversation roles must alternate!");
}

TEST(ChatErrors, ContextMustBeAnObject) {
  const ChatTemplate tpl = ChatTemplate::parse("x");
  try {
    tpl.render(Json::array());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
}

TEST(ChatErrors, InvalidUtf8TemplateIsRejected) {
  const TemplateError e = parse_error(std::string("ok \xff\xfe {{ x }}"));
  EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos);
}

TEST(ChatLimits, LoopIterationLimit) {
  RenderLimits limits;
  limits.max_loop_iterations = 1000;
  // 100 x 100 nested iterations = 10 000 > 1 000; each range is within the sandbox's own bound.
  const TemplateError e = render_error("{% for i in range(100) %}{% for j in range(100) %}.{% endfor %}{% endfor %}",
                                       Json::object(), limits);
  EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
  EXPECT_NE(std::string(e.what()).find("iteration limit"), std::string::npos) << e.what();
  // Just under the limit renders.
  const ChatTemplate ok = ChatTemplate::parse(
      "{% for i in range(10) %}{% for j in range(99) %}.{% endfor %}{% endfor %}");
  EXPECT_EQ(ok.render(Json::object(), limits).size(), 990u);
}

TEST(ChatLimits, RecursionDepthLimit) {
  RenderLimits limits;
  limits.max_call_depth = 20;
  const std::string rec = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
  const TemplateError e = render_error(rec, Json::object(), limits);
  EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
  EXPECT_NE(std::string(e.what()).find("depth"), std::string::npos) << e.what();
  const ChatTemplate bounded = ChatTemplate::parse(
      "{% macro f(n) %}{% if n < 19 %}{{ f(n + 1) }}{% else %}{{ n }}{% endif %}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(bounded.render(Json::object(), limits), "19");
}

TEST(ChatLimits, OutputSizeLimit) {
  RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  EXPECT_EQ(render_error("{{ 'x' * 100000000000 }}", Json::object(), limits).kind(), TemplateError::Kind::Limit);
  EXPECT_EQ(render_error("{% for i in range(100000) %}abcdef{% endfor %}", Json::object(), limits).kind(),
            TemplateError::Kind::Limit);
  EXPECT_EQ(render_error("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                         "{% endfor %}",
                         Json::object(), limits)
                .kind(),
            TemplateError::Kind::Limit);
  const ChatTemplate ok = ChatTemplate::parse("{{ 'x' * 65536 }}");
  EXPECT_EQ(ok.render(Json::object(), limits).size(), 65536u);
}

TEST(ChatLimits, SandboxRangeLimit) {
  const TemplateError e = render_error("{{ range(1000000) | length }}");
  EXPECT_NE(std::string(e.what()).find("MAX_RANGE"), std::string::npos) << e.what();
}

TEST(ChatLimits, DeepNestingIsRefusedNotACrash) {
  EXPECT_EQ(parse_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").kind(),
            TemplateError::Kind::Syntax);
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  for (int i = 0; i < 5000; ++i) ifs += "{% endif %}";
  EXPECT_EQ(parse_error(ifs).kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(parse_error("{{ " + std::string(20000, '-') + "1 }}").kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(parse_error("{{ " + std::string(20000, '[') + " }}").kind(), TemplateError::Kind::Syntax);

  // JSON nested 100 000 levels deep is refused before nlohmann's (recursive) parser sees it.
  const std::string deep = "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  try {
    parse_json_text(deep, "context.json");
    FAIL() << "expected a format error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Format);
    EXPECT_NE(std::string(e.what()).find("context.json"), std::string::npos);
  }
  EXPECT_EQ(parse_json_text("{\"a\": \"[[[[\"}", "x")["a"], "[[[[");  // brackets inside strings do not count
  // A context 600 levels deep (parsed by the caller) is a Limit error, not a crash.
  const Json context = Json::parse("{\"x\": " + std::string(600, '[') + std::string(600, ']') + "}");
  const ChatTemplate tpl = ChatTemplate::parse("{{ x }}");
  try {
    tpl.render(context);
    FAIL() << "expected a limit error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
  }
  // Lists built by the template itself, one level per iteration.
  EXPECT_EQ(render_error("{% set ns = namespace(l=[]) %}{% for i in range(5000) %}{% set ns.l = [ns.l] %}{% endfor %}")
                .kind(),
            TemplateError::Kind::Limit);
}

TEST(ChatLimits, SelfReferencingNamespaceDoesNotHang) {
  const TemplateError e = render_error(
      "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");  // repr would recurse forever
  EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
}

TEST(ChatLimits, PathologicalTemplateFinishesQuickly) {
  // 1 000 000 loop iterations are allowed by default; the render must still end in bounded time.
  const auto start = std::chrono::steady_clock::now();
  const TemplateError e = render_error(
      "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}"
      "{% endfor %}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(ChatTemplate, RenderIsConstAndThreadSafe) {
  const ChatTemplate tpl = ChatTemplate::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ m.content | upper }}"
      "{% endfor %}{{ ns.n }}");
  const Json ctx = Json{{"messages", Json::array({Json{{"content", "a"}}, Json{{"content", "b"}}})}};
  std::vector<std::thread> threads;
  std::vector<std::string> out(8);
  for (size_t t = 0; t < out.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) out[t] = tpl.render(ctx);
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& s : out) EXPECT_EQ(s, "AB2");
}

}  // namespace
}  // namespace inferdesk::chat
