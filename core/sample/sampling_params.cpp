#include "core/sample/sampling_params.h"

#include <cmath>
#include <sstream>
#include <string>

#include "core/util/error.h"

namespace inferdesk {
namespace {

template <typename T>
[[noreturn]] void reject(const char* name, T value, const char* range) {
  std::ostringstream os;
  os << name << " must be " << range << ", got " << value;
  throw Error(ErrorCode::InvalidArgument, os.str());
}

}  // namespace

void SamplingParams::validate() const {
  // Written so that NaN fails every check.
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    reject("temperature", temperature, "a finite number >= 0");
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) reject("top_p", top_p, "in (0, 1]");
  if (top_k < -1) reject("top_k", top_k, "-1 or 0 (disabled) or >= 1");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) reject("min_p", min_p, "in [0, 1]");
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    reject("repetition_penalty", repetition_penalty, "a finite number > 0");
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    reject("presence_penalty", presence_penalty, "in [-2, 2]");
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    reject("frequency_penalty", frequency_penalty, "in [-2, 2]");
  }
  if (max_tokens < 1) reject("max_tokens", max_tokens, ">= 1");
  if (logprobs < 0 || logprobs > kMaxLogprobs) reject("logprobs", logprobs, "in [0, 20]");
  for (int32_t id : stop_token_ids) {
    if (id < 0) reject("stop_token_ids", id, "token ids >= 0");
  }
}

}  // namespace inferdesk
