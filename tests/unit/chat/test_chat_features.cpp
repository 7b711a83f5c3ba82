// Language features of the chat-template renderer against jinja2's own output.
//
// feature_cases.json holds ~170 small templates (literals, operators and precedence, undefined
// values, attribute/item access, slicing, every statement, whitespace control, every filter, test,
// string/dict/list method and global) with the text jinja2 renders for them in transformers'
// configuration, or the fact that it raises. tools/chat/make_feature_cases.py regenerates it.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "core/chat/chat_template.h"

namespace inferdesk::chat {
namespace {

Json load_cases() {
  const auto path = std::filesystem::path(INFERDESK_SOURCE_DIR) / "tests/unit/chat/feature_cases.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return Json::parse(in);
}

RenderOptions pinned_clock() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 2;
  tm.tm_mday = 14;
  tm.tm_hour = 9;
  tm.tm_min = 26;
  tm.tm_sec = 53;
  timegm(&tm);
  RenderOptions o;
  o.fixed_now = tm;
  return o;
}

class FeatureCase : public ::testing::TestWithParam<size_t> {
 public:
  static const Json& cases() {
    static const Json c = load_cases();
    return c;
  }
};

TEST_P(FeatureCase, MatchesJinja2) {
  const Json& c = cases()["cases"][GetParam()];
  SCOPED_TRACE("case " + c["name"].get<std::string>() + ": " + c["template"].get<std::string>());
  std::string got, error;
  try {
    got = ChatTemplate::parse(c["template"].get<std::string>(), c["name"].get<std::string>())
              .render(c["context"], pinned_clock());
  } catch (const TemplateError& e) {
    error = e.what();
  }
  if (c.contains("error")) {
    EXPECT_FALSE(error.empty()) << "jinja2 raised " << c["error"] << " but we rendered " << Json(got);
  } else {
    EXPECT_EQ(error, "");
    EXPECT_EQ(got, c["text"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Jinja2, FeatureCase, ::testing::Range<size_t>(0, FeatureCase::cases()["cases"].size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return FeatureCase::cases()["cases"][info.param]["name"].get<std::string>();
                         });

TEST(FeatureCases, CoverTheIssueList) {
  // The cases file must keep covering the features the issue lists; a regenerated file that lost
  // some would silently test less.
  std::string all;
  for (const Json& c : FeatureCase::cases()["cases"]) all += c["template"].get<std::string>() + "\n";
  for (const char* needle : {"loop.index",
                             "loop.index0",
                             "loop.first",
                             "loop.last",
                             "loop.length",
                             "loop.revindex",
                             "{% else %}",
                             "namespace(",
                             "{% set body %}",
                             "{% macro",
                             "{% call",
                             "| trim",
                             "tojson(indent",
                             "| length",
                             "| count",
                             "| upper",
                             "| lower",
                             "| title",
                             "| capitalize",
                             "| replace",
                             "| join",
                             "| default",
                             "| first",
                             "| last",
                             "| items",
                             "| list",
                             "| string",
                             "| int",
                             "| float",
                             "| round",
                             "| safe",
                             "selectattr",
                             "rejectattr",
                             "| map",
                             "| select",
                             "| reject",
                             "| unique",
                             "| dictsort",
                             "| indent",
                             "| wordcount",
                             "| abs",
                             "| batch",
                             "is defined",
                             "is undefined",
                             "is none",
                             "is string",
                             "is number",
                             "is integer",
                             "is boolean",
                             "is mapping",
                             "is iterable",
                             "is sequence",
                             "is equalto",
                             "is in",
                             "is true",
                             "is false",
                             ".startswith(",
                             ".endswith(",
                             ".strip(",
                             ".lstrip(",
                             ".rstrip(",
                             ".split(",
                             ".upper(",
                             ".lower(",
                             ".replace(",
                             ".title(",
                             ".format(",
                             ".get(",
                             ".items(",
                             ".keys(",
                             ".values(",
                             ".append(",
                             "[::-1]",
                             "[-2:]",
                             " in ",
                             " ~ ",
                             "is not",
                             " if ",
                             "{%-",
                             "-%}",
                             "raise_exception",
                             "strftime_now",
                             "{% raw %}",
                             "{#",
                             "{% generation %}",
                             "{% break %}",
                             "{% continue %}"}) {
    EXPECT_NE(all.find(needle), std::string::npos) << "no feature case uses " << needle;
  }
  EXPECT_GE(FeatureCase::cases()["cases"].size(), 150u);
}

}  // namespace
}  // namespace inferdesk::chat
