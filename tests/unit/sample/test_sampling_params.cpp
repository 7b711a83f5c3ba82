#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "core/sample/sampling_params.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

void expect_valid(const std::function<void(SamplingParams&)>& set) {
  SamplingParams p;
  set(p);
  EXPECT_NO_THROW(p.validate());
}

void expect_invalid(const std::function<void(SamplingParams&)>& set, const std::string& name) {
  SamplingParams p;
  set(p);
  try {
    p.validate();
    ADD_FAILURE() << "accepted an invalid " << name;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(std::string(e.what()).rfind(name, 0), 0u) << e.what();  // starts with the name
    EXPECT_NE(std::string(e.what()).find("must be"), std::string::npos) << e.what();
  }
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(SamplingParamsValidate, DefaultsAreValid) { EXPECT_NO_THROW(SamplingParams{}.validate()); }

TEST(SamplingParamsValidate, Temperature) {
  expect_valid([](auto& p) { p.temperature = 0.0f; });
  expect_valid([](auto& p) { p.temperature = 100.0f; });
  expect_invalid([](auto& p) { p.temperature = -0.01f; }, "temperature");
  expect_invalid([](auto& p) { p.temperature = kNaN; }, "temperature");
  expect_invalid([](auto& p) { p.temperature = kInf; }, "temperature");
}

TEST(SamplingParamsValidate, TopPAndMinP) {
  expect_valid([](auto& p) { p.top_p = 1.0f; });
  expect_valid([](auto& p) { p.top_p = 1e-6f; });
  expect_invalid([](auto& p) { p.top_p = 0.0f; }, "top_p");
  expect_invalid([](auto& p) { p.top_p = 1.0001f; }, "top_p");
  expect_invalid([](auto& p) { p.top_p = kNaN; }, "top_p");
  expect_valid([](auto& p) { p.min_p = 0.0f; });
  expect_valid([](auto& p) { p.min_p = 1.0f; });
  expect_invalid([](auto& p) { p.min_p = -0.1f; }, "min_p");
  expect_invalid([](auto& p) { p.min_p = 1.1f; }, "min_p");
}

TEST(SamplingParamsValidate, TopK) {
  expect_valid([](auto& p) { p.top_k = -1; });
  expect_valid([](auto& p) { p.top_k = 0; });
  expect_valid([](auto& p) { p.top_k = 1; });
  expect_valid([](auto& p) { p.top_k = 1000000; });
  expect_invalid([](auto& p) { p.top_k = -2; }, "top_k");
}

TEST(SamplingParamsValidate, Penalties) {
  expect_valid([](auto& p) { p.repetition_penalty = 0.01f; });
  expect_valid([](auto& p) { p.repetition_penalty = 5.0f; });
  expect_invalid([](auto& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty");
  expect_invalid([](auto& p) { p.repetition_penalty = -1.0f; }, "repetition_penalty");
  expect_invalid([](auto& p) { p.repetition_penalty = kInf; }, "repetition_penalty");
  expect_valid([](auto& p) { p.presence_penalty = -2.0f; });
  expect_valid([](auto& p) { p.presence_penalty = 2.0f; });
  expect_invalid([](auto& p) { p.presence_penalty = 2.01f; }, "presence_penalty");
  expect_invalid([](auto& p) { p.presence_penalty = -2.01f; }, "presence_penalty");
  expect_valid([](auto& p) { p.frequency_penalty = -2.0f; });
  expect_valid([](auto& p) { p.frequency_penalty = 2.0f; });
  expect_invalid([](auto& p) { p.frequency_penalty = 2.5f; }, "frequency_penalty");
  expect_invalid([](auto& p) { p.frequency_penalty = kNaN; }, "frequency_penalty");
}

TEST(SamplingParamsValidate, CountsAndIds) {
  expect_valid([](auto& p) { p.max_tokens = 1; });
  expect_invalid([](auto& p) { p.max_tokens = 0; }, "max_tokens");
  expect_valid([](auto& p) { p.logprobs = 0; });
  expect_valid([](auto& p) { p.logprobs = 20; });
  expect_invalid([](auto& p) { p.logprobs = -1; }, "logprobs");
  expect_invalid([](auto& p) { p.logprobs = 21; }, "logprobs");
  expect_valid([](auto& p) { p.stop_token_ids = {0, 5}; });
  expect_invalid([](auto& p) { p.stop_token_ids = {3, -1}; }, "stop_token_ids");
}

TEST(SamplingParamsValidate, GreedyThreshold) {
  SamplingParams p;
  p.temperature = 0.0f;
  EXPECT_TRUE(p.is_greedy());
  p.temperature = 9e-6f;
  EXPECT_TRUE(p.is_greedy());
  p.temperature = 1e-4f;
  EXPECT_FALSE(p.is_greedy());
}

}  // namespace
}  // namespace inferdesk
