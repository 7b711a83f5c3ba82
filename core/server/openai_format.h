// OpenAI / vLLM response shapes: chat.completion(.chunk) and text_completion objects, logprobs in
// both endpoints' forms, usage, and the SSE framing ("data: {...}\n\n", "data: [DONE]\n\n").
// Pure functions of the Generation's state; the session decides when to send what.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/server/api_error.h"
#include "core/server/generation.h"
#include "core/tokenizer/tokenizer.h"

namespace inferdesk::server {

struct ResponseMeta {
  std::string id;  // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

Json usage_json(const Usage& u);

// Streaming chunks.
Json chat_role_chunk(const ResponseMeta& meta, int32_t index);
Json stream_chunk(const ResponseMeta& meta, const GenerationRequest& req, const ChoiceDelta& d, const Tokenizer* tok,
                  const std::optional<Usage>& usage, bool first_of_choice);
Json usage_chunk(const ResponseMeta& meta, const GenerationRequest& req, const Usage& u);
// dump(stream_chunk(...)), byte for byte, written directly when there are no logprobs: the one
// thing the server does per token and per stream, so it skips building a JSON tree.
std::string stream_chunk_text(const ResponseMeta& meta, const GenerationRequest& req, const ChoiceDelta& d,
                              const Tokenizer* tok, const std::optional<Usage>& usage, bool first_of_choice);

// The whole response of a finished generation (stream: false).
Json full_response(const ResponseMeta& meta, const GenerationRequest& req, const Generation& g, const Tokenizer* tok);

// JSON text with invalid UTF-8 replaced (never throws on odd bytes).
std::string dump(const Json& j);
inline std::string sse_event(const Json& j) { return "data: " + dump(j) + "\n\n"; }
inline const char* sse_done() { return "data: [DONE]\n\n"; }

}  // namespace inferdesk::server
