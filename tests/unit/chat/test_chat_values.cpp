// Python semantics of the renderer's building blocks: float repr, str repr, UTF-8 string methods,
// slicing, json.dumps, value equality and dict key identity.
#include <gtest/gtest.h>

#include <cmath>

#include "core/chat/builtins.h"
#include "core/chat/chat_template.h"
#include "core/chat/pystr.h"
#include "core/chat/value.h"

namespace inferdesk::chat {
namespace {

TEST(PyStr, FloatReprMatchesPython) {
  EXPECT_EQ(py::float_repr(1.0), "1.0");
  EXPECT_EQ(py::float_repr(0.1), "0.1");
  EXPECT_EQ(py::float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(py::float_repr(1e16), "1e+16");
  EXPECT_EQ(py::float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(py::float_repr(1e-5), "1e-05");
  EXPECT_EQ(py::float_repr(0.0001), "0.0001");
  EXPECT_EQ(py::float_repr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(py::float_repr(123456789.125), "123456789.125");
  EXPECT_EQ(py::float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(py::float_repr(-0.0), "-0.0");
  EXPECT_EQ(py::float_repr(INFINITY), "inf");
  EXPECT_EQ(py::float_repr(NAN), "nan");
}

TEST(PyStr, StrReprMatchesPython) {
  EXPECT_EQ(py::str_repr("abc"), "'abc'");
  EXPECT_EQ(py::str_repr("it's"), "\"it's\"");
  EXPECT_EQ(py::str_repr("a'b\"c"), "'a\\'b\"c'");
  EXPECT_EQ(py::str_repr("t\tn\nr\r\\"), "'t\\tn\\nr\\r\\\\'");
  EXPECT_EQ(py::str_repr("\x01\x7f"), "'\\x01\\x7f'");
  EXPECT_EQ(py::str_repr("é你好😀"), "'é你好😀'");
  EXPECT_EQ(py::str_repr("a\u200db\u00a0"), "'a\\u200db\\xa0'");
}

TEST(PyStr, UnicodeAwareMethods) {
  EXPECT_EQ(py::cp_length("añ😀"), 3u);
  EXPECT_EQ(py::strip("\u3000 x\u00a0\n", std::nullopt, true, true), "x");
  EXPECT_EQ(py::strip("xyhixy", std::string("yx"), true, false), "hixy");
  EXPECT_EQ(py::upper("straße"), "STRASSE");
  EXPECT_EQ(py::lower("ΟΔΟΣ ΣΑΣ"), "οδος σας");
  EXPECT_EQ(py::title("they're bill's"), "They'Re Bill'S");
  EXPECT_EQ(py::capitalize("éCOLE"), "École");
  EXPECT_EQ(py::split(" a  b ", std::nullopt, -1), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(py::split("a,,b", std::string(","), -1), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(py::rsplit("a b c", std::nullopt, 1), (std::vector<std::string>{"a b", "c"}));
  EXPECT_EQ(py::splitlines("a\r\nb\x0b\x63\u2028d", false), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(py::replace("añb", "", "-", -1), "-a-ñ-b-");
  EXPECT_EQ(py::find("héllo", "l"), 2);
  EXPECT_EQ(py::pad("ab", 5, '*', 'c'), "**ab*");
  EXPECT_EQ(py::pad("ab", 5, '*', '^'), "*ab**");
  EXPECT_THROW(py::split("a", std::string(""), -1), std::invalid_argument);
}

TEST(PyStr, SliceIndicesFollowPython) {
  using V = std::vector<size_t>;
  EXPECT_EQ(py::slice_indices(5, 1, std::nullopt, 1), (V{1, 2, 3, 4}));
  EXPECT_EQ(py::slice_indices(5, std::nullopt, -1, 1), (V{0, 1, 2, 3}));
  EXPECT_EQ(py::slice_indices(5, std::nullopt, std::nullopt, -1), (V{4, 3, 2, 1, 0}));
  EXPECT_EQ(py::slice_indices(5, -2, std::nullopt, 1), (V{3, 4}));
  EXPECT_EQ(py::slice_indices(5, 3, 0, -1), (V{3, 2, 1}));
  EXPECT_EQ(py::slice_indices(5, 100, std::nullopt, 1), V{});
  EXPECT_EQ(py::slice_indices(5, -100, 2, 1), (V{0, 1}));
  EXPECT_EQ(py::norm_index(-1, 3), std::optional<size_t>(2));
  EXPECT_EQ(py::norm_index(3, 3), std::nullopt);
}

TEST(PyStr, Utf8Validation) {
  EXPECT_TRUE(py::is_valid_utf8("héllo 😀 \xEF\xBF\xBD"));
  EXPECT_FALSE(py::is_valid_utf8("\xC3"));
  EXPECT_FALSE(py::is_valid_utf8("\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(py::is_valid_utf8("\xC0\xAF"));      // overlong
  EXPECT_EQ(py::decode("a\xFF"
                       "b"),
            (std::u32string{U'a', 0xFFFD, U'b'}));
}

TEST(Values, JsonDumpsLikePython) {
  const Value v = from_json(Json::parse(R"({"b": [1, 2.0, null, true, "é\"\\\n\u0001"], "a": {}, "c": []})"));
  JsonDumpOptions o;
  EXPECT_EQ(json_dumps(v, o), R"({"b": [1, 2.0, null, true, "é\"\\\n\u0001"], "a": {}, "c": []})");
  o.indent = "  ";
  o.item_separator = ",";
  EXPECT_EQ(
      json_dumps(v, o),
      "{\n  \"b\": [\n    1,\n    2.0,\n    null,\n    true,\n    \"é\\\"\\\\\\n\\u0001\"\n  ],\n  \"a\": {},\n  \"c\": []\n}");
  JsonDumpOptions ascii;
  ascii.ensure_ascii = true;
  ascii.sort_keys = true;
  EXPECT_EQ(json_dumps(from_json(Json::parse(R"({"z": "😀", "a": "é"})")), ascii),
            R"({"a": "\u00e9", "z": "\ud83d\ude00"})");
  EXPECT_THROW(json_dumps(Value(), o), EvalError);  // Undefined is not JSON serializable
}

TEST(Values, PythonEqualityAndDictKeys) {
  EXPECT_TRUE(Value::integer(1) == Value::number(1.0));
  EXPECT_TRUE(Value::boolean(true) == Value::integer(1));
  EXPECT_FALSE(Value::string("1") == Value::integer(1));
  EXPECT_FALSE(Value::list({Value::integer(1)}, true) == Value::list({Value::integer(1)}));  // tuple != list
  EXPECT_TRUE(Value() == Value());                                                           // Undefined == Undefined

  Dict d;
  d.set(Value::integer(1), Value::string("int"));
  d.set(Value::number(1.0), Value::string("float"));  // same key: replaced in place
  d.set(Value::string("1"), Value::string("str"));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.find(Value::boolean(true))->as_string(), "float");
  EXPECT_EQ(d.find("1")->as_string(), "str");
  EXPECT_THROW(d.set(Value::list({}), Value::none()), EvalError);  // unhashable
  // Large dicts switch to a hash index; lookups and order must not change.
  Dict big;
  for (int i = 0; i < 100; ++i) big.set(Value::string("k" + std::to_string(99 - i)), Value::integer(i));
  EXPECT_EQ(big.items().front().first.as_string(), "k99");
  EXPECT_EQ(big.find("k0")->as_int(), 99);
  big.set(Value::string("k0"), Value::integer(-1));
  EXPECT_EQ(big.size(), 100u);
  EXPECT_EQ(big.items().back().second.as_int(), -1);
}

TEST(Values, ReprOfContainers) {
  const Value v = from_json(Json::parse(R"({"role": "user", "n": [1, 2.5, null, false], "s": "it's"})"));
  EXPECT_EQ(v.str(), "{'role': 'user', 'n': [1, 2.5, None, False], 's': \"it's\"}");
  EXPECT_EQ(Value::list({Value::integer(1)}, true).repr(), "(1,)");
  EXPECT_EQ(Value::string("<b>", true).repr(), "Markup('<b>')");
  EXPECT_THROW(v.repr(10), EvalError);  // bounded text
}

}  // namespace
}  // namespace inferdesk::chat
