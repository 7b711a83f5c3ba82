// Parsing of POST /v1/chat/completions and /v1/completions bodies into a GenerationRequest, with
// vLLM's request shapes, defaults and checks: messages rendered with the model's chat template
// (chat_template_kwargs, add_generation_prompt, continue_final_message, tools given to the
// template), prompts as text, token ids or lists of either (completions), sampling fields
// validated with vLLM's ranges, max_tokens checked against the context. Every problem is an
// ApiError(400) naming the field (404 for an unknown model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sample/sampling_params.h"
#include "core/server/api_error.h"
#include "core/server/served_model.h"

namespace inferdesk::server {

enum class Endpoint { Chat, Completion };

struct PromptInput {
  std::vector<int32_t> ids;
  std::string text;        // the prompt as text (echo); decoded from the ids when given as ids
  int32_t max_tokens = 0;  // resolved for this prompt (context left, request, model default)
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::Completion;
  std::vector<PromptInput> prompts;  // chat: exactly one
  int32_t n = 1;                     // choices per prompt
  SamplingParams params;             // shared by every choice; max_tokens is per prompt
  std::vector<std::string> stop;
  bool include_stop_str = false;
  bool skip_special_tokens = true;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats
  bool echo = false;              // completions: the prompt text before the output
  bool logprobs = false;          // return log-probabilities of the output tokens
  int32_t top_logprobs = 0;       // best alternatives per token
  bool return_token_ids = false;  // vLLM extension: token_ids in each choice

  int64_t num_choices() const { return static_cast<int64_t>(prompts.size()) * n; }
  // Choice i's prompt (choices are ordered prompt-major, as vLLM's index = prompt * n + k).
  const PromptInput& prompt_of(int64_t choice) const { return prompts[static_cast<size_t>(choice / n)]; }
};

struct RequestLimits {
  int32_t max_choices = 256;  // prompts x n of one request
  size_t max_stop_strings = 64;
  size_t max_stop_bytes = 1024;    // per stop string
  size_t max_prompt_items = 1024;  // prompts of one completions request
};

// Throw ApiError: 400 for a malformed field, 404 when `model` names another model.
GenerationRequest parse_chat_request(const Json& body, const ServedModel& model, const RequestLimits& limits);
GenerationRequest parse_completion_request(const Json& body, const ServedModel& model, const RequestLimits& limits);

// The prompt of a chat-shaped body (messages, add_generation_prompt, continue_final_message,
// chat_template(_kwargs), tools, add_special_tokens): rendered and tokenized. /tokenize uses it.
PromptInput chat_prompt(const Json& body, const ServedModel& model);

// The "model" field: absent or one of the served names; ApiError(404) otherwise.
void check_model_name(const Json& body, const ServedModel& model);

}  // namespace inferdesk::server
