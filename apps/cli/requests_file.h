// `generate --requests FILE.jsonl`: one request per line, as a JSON object with exactly one of
//   "prompt_ids": [1, 2, 3]                         token ids, used as they are
//   "prompt": "text"                                the model's tokenizer, no chat template
//   "messages": [{"role": "user", "content": "hi"}] the model's chat template (a reply follows)
// and optional sampling fields (max_tokens, temperature, top_p, top_k, min_p, repetition_penalty,
// presence_penalty, frequency_penalty, seed, logprobs, ignore_eos, stop_token_ids) that override
// the command line. The file is read and tokenized before the model loads, so its mistakes are
// reported at once, each naming its line.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "apps/cli/text_prompt.h"
#include "core/chat/chat_template.h"
#include "core/engine/engine.h"

namespace inferdesk::cli {

struct RequestLine {
  size_t line = 0;  // 1-based, in the file; 0 for the command line's prompt
  std::vector<int32_t> prompt_ids;
  bool from_text = false;  // "prompt" or "messages": the reply is decoded to text as well
  chat::Json fields;       // the line's object (its sampling fields)
};

// Reads the file. Text lines use the tokenizer of `model_dir` (loaded into `tokenizer` on first
// need) with `text` for the chat template name, its kwargs and special-token handling.
std::vector<RequestLine> read_request_lines(const std::string& path, const std::filesystem::path& model_dir,
                                            const TextPromptOptions& text, std::optional<Tokenizer>& tokenizer);

// `base` (the command line's sampling parameters) with the line's own fields on top.
Request make_request(const RequestLine& line, SamplingParams base);

}  // namespace inferdesk::cli
