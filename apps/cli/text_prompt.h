// Text prompts for `generate`: encode --prompt with the model's tokenizer, optionally through its
// chat template (--chat), and decode generated ids back to text.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/tokenizer/tokenizer.h"

namespace inferdesk::cli {

struct TextPromptOptions {
  std::string prompt;
  bool chat = false;
  std::string system;                // optional system message (--chat only)
  std::string chat_template_kwargs;  // JSON object, e.g. {"enable_thinking": false}
  std::string template_name;         // a named template (e.g. tool_use); "" = default
  // false (default): special-token strings typed in the prompt or system message stay plain text,
  // so "<|im_end|>" in user text cannot end the turn; true: parse them as Hugging Face's tok(text)
  // does.
  bool parse_special_tokens = false;
};

struct EncodedPrompt {
  std::vector<int32_t> ids;
  std::string rendered;  // the text that was tokenized (the chat template's output with --chat)
  std::string warning;   // set when user text had to be tokenized in a non-standard way
};

// Loads the model folder's tokenizer (NotFound with a clear message, naming what needed it, when
// it has none).
Tokenizer load_tokenizer_for(const std::filesystem::path& model_dir, const std::string& needed_by = "--prompt");

// --chat-template-kwargs: a JSON object ({} when empty); Error(InvalidArgument) or the JSON
// parser's Format error otherwise.
chat::Json parse_template_kwargs(const std::string& text);

// Plain prompt: HF tok(text) (special tokens added as the tokenizer's post-processor says).
// Chat: the model's chat template with [system?, user] and add_generation_prompt, then
// tokenized without adding special tokens (the template already has them), as transformers'
// apply_chat_template(tokenize=True) does. Text without special-token strings gives exactly the
// Hugging Face ids; where user text contains them (and parse_special_tokens is false) that text
// is tokenized with special tokens kept as plain text and spliced between the template's parts.
EncodedPrompt encode_prompt(const Tokenizer& tok, const std::filesystem::path& model_dir,
                            const TextPromptOptions& opts);

// A whole conversation (a JSON array of {"role", "content"} objects, as in a --requests line)
// through the model's chat template with add_generation_prompt, tokenized as encode_prompt's chat
// path does; opts.prompt, .system and .chat are not used.
EncodedPrompt encode_messages(const Tokenizer& tok, const std::filesystem::path& model_dir, const chat::Json& messages,
                              const TextPromptOptions& opts);

}  // namespace inferdesk::cli
