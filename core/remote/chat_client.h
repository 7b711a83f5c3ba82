// A streaming client for /v1/chat/completions (or /v1/completions with the messages joined) on
// any OpenAI-compatible server: content deltas handed over as they arrive, Stop hangs up, usage
// taken from the last chunk when the server sends it (stream_options.include_usage asked for).
// The reply's stats are measured as the dashboard measures (vLLM's `bench serve` definitions):
// TTFT = send to the first chunk carrying text; decode rate = (output tokens - 1) / (latency -
// TTFT), output tokens from usage, else the number of content chunks. Blocking: call it on a
// worker thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/remote/endpoint.h"

namespace inferdesk::remote {

struct ChatMessage {
  std::string role;  // "system" / "user" / "assistant"
  std::string content;
};

struct ChatOptions {
  double temperature = 1.0;
  double top_p = 1.0;
  int max_tokens = 512;
  std::optional<uint64_t> seed;
  double timeout_s = 600;
};

struct ReplyStats {
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  bool usage_from_server = false;
  int chunks = 0;  // content chunks
  double ttft_s = 0, latency_s = 0, tokens_per_s = 0;
  std::string finish_reason;  // "stop", "length", "cancelled" (Stop), or the server's
};

// The JSON body stream_chat sends (exposed for tests).
std::string chat_request_body(const Endpoint& endpoint, const std::vector<ChatMessage>& messages,
                              const ChatOptions& options);

// Throws RemoteError (Unreachable, Unauthorized, HttpStatus, Stream) — except for Stop, which
// returns the text so far with finish_reason "cancelled".
ReplyStats stream_chat(const Endpoint& endpoint, const std::vector<ChatMessage>& messages, const ChatOptions& options,
                       const std::function<void(std::string_view text)>& on_text, const std::atomic<bool>* stop);

}  // namespace inferdesk::remote
