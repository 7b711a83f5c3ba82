// core/util: dtype conversions, the untrusted-JSON guard and the strict parser.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "core/util/dtype.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"
#include "core/util/regular_file.h"

namespace inferdesk {
namespace {

TEST(JsonGuard, RejectsHostileNestingWithoutRecursing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  try {
    parse_untrusted_json(deep, "evil.json");
    FAIL() << "accepted 100000 levels";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Format);
    EXPECT_NE(std::string(e.what()).find("evil.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("nested deeper"), std::string::npos);
  }
}

TEST(JsonGuard, BracketsInsideStringsDoNotCount) {
  const std::string text = "{\"a\": \"" + std::string(1000, '[') + "\\\"]]\", \"b\": [[1]]}";
  const auto j = parse_untrusted_json(text, "ok.json", 3);
  EXPECT_EQ(j["b"][0][0], 1);
  EXPECT_THROW(parse_untrusted_json("[[[[1]]]]", "x", 3), Error);
  EXPECT_NO_THROW(parse_untrusted_json("[[[1]]]", "x", 3));
}

TEST(JsonGuard, MalformedTextIsAFormatErrorNamingTheSource) {
  try {
    parse_untrusted_json("{\"a\": ", "config.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Format);
    EXPECT_EQ(std::string(e.what()).rfind("config.json: invalid JSON", 0), 0u) << e.what();
  }
}

TEST(JsonGuard, OrderedParseKeepsKeyOrder) {
  const auto j = parse_untrusted_ordered_json("{\"z\": 1, \"a\": 2}", "t");
  EXPECT_EQ(j.begin().key(), "z");
}

// The strict parser: the same document as nlohmann's, or a Format error naming source and key.
TEST(JsonStrict, ParsesLikeNlohmannAndRefusesDuplicatesAtAnyDepth) {
  const std::string text =
      R"({"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": {"d": [[]]}, "e": 18446744073709551615})";
  EXPECT_EQ(parse_untrusted_json_strict(text, "t"), nlohmann::json::parse(text));
  EXPECT_EQ(parse_untrusted_json_strict("7", "t"), 7);
  try {
    parse_untrusted_json_strict(R"({"a": [{"k": 1, "j": 2, "k": 3}]})", "dup.json");
    FAIL() << "accepted a duplicate key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Format);
    EXPECT_STREQ(e.what(), "dup.json: duplicate key \"k\"");
  }
  // The same key in sibling objects is fine.
  EXPECT_NO_THROW(parse_untrusted_json_strict(R"([{"k": 1}, {"k": 2}])", "t"));
}

TEST(JsonStrict, LimitsAndMalformedText) {
  EXPECT_NO_THROW(parse_untrusted_json_strict("[[[1]]]", "x", JsonLimits{3}));
  EXPECT_THROW(parse_untrusted_json_strict("[[[[1]]]]", "x", JsonLimits{3}), Error);
  EXPECT_THROW(parse_untrusted_json_strict(std::string(100000, '['), "x"), Error);
  EXPECT_NO_THROW(parse_untrusted_json_strict(R"({"a": 1, "b": 2})", "x", JsonLimits{8, 2}));
  EXPECT_THROW(parse_untrusted_json_strict(R"({"a": 1, "b": 2, "c": 3})", "x", JsonLimits{8, 2}), Error);
  for (const char* bad : {"{\"a\": ", "[1,]", "{} {}", "", "\"\\u12\""}) {
    try {
      parse_untrusted_json_strict(bad, "config.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Format);
      EXPECT_EQ(std::string(e.what()).rfind("config.json: invalid JSON", 0), 0u) << e.what();
    }
  }
}

TEST(JsonStrict, QuoteUntrustedEscapesControlBytes) {
  EXPECT_EQ(quote_untrusted("model.safetensors"), "\"model.safetensors\"");
  EXPECT_EQ(quote_untrusted(std::string("a\0b\n\\", 5)), "\"a\\x00b\\x0a\\\\\"");
}

TEST(RegularFile, RefusesDevicesAndDirectoriesByName) {
  for (const auto& [path, what] : {std::pair{"/dev/null", "a character device"}, std::pair{"/tmp", "a directory"}}) {
    try {
      read_regular_file(path, 100);
      ADD_FAILURE() << "read " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Format);
      EXPECT_EQ(std::string(e.what()), std::string(path) + ": not a regular file (" + what + ")");
    }
  }
  EXPECT_THROW(
      {
        try {
          read_regular_file("/nonexistent/config.json", 100);
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::NotFound);
          throw;
        }
      },
      Error);
}

TEST(DType, Bf16RoundTripAndRounding) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(-2.5f)), -2.5f);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even → 1.0.
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16RoundTripSubnormalsAndOverflow) {
  for (float v : {0.0f, 1.0f, -3.25f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f})
    EXPECT_EQ(f16_to_f32(f32_to_f16(v)), v) << v;
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(70000.0f))));
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(*parse_dtype("BF16"), DType::BF16);
  EXPECT_EQ(*parse_dtype("F8_E4M3"), DType::F8E4M3);
  EXPECT_EQ(*parse_dtype("F8_E5M2"), DType::F8E5M2);
  EXPECT_STREQ(dtype_name(DType::F8E4M3), "F8_E4M3");
  EXPECT_EQ(dtype_size(DType::F8E4M3), 1u);
  EXPECT_FALSE(parse_dtype("F8_E8M0").has_value());
}

}  // namespace
}  // namespace inferdesk
