// Text prompts for `generate`: encode --prompt with the model's tokenizer, optionally through its
// chat template (--chat), and decode generated ids back to text.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace inferdesk::cli {

struct TextPromptOptions {
  std::string prompt;
  bool chat = false;
  std::string system;                // optional system message (--chat only)
  std::string chat_template_kwargs;  // JSON object, e.g. {"enable_thinking": false}
  std::string template_name;         // a named template (e.g. tool_use); "" = default
};

struct EncodedPrompt {
  std::vector<int32_t> ids;
  std::string rendered;  // the text that was tokenized (the chat template's output with --chat)
};

// Loads the model folder's tokenizer (NotFound with a clear message when it has none).
Tokenizer load_tokenizer_for(const std::filesystem::path& model_dir);

// Plain prompt: HF tok(text) (special tokens added as the tokenizer's post-processor says).
// Chat: the model's chat template with [system?, user] and add_generation_prompt, then
// tokenized without adding special tokens (the template already has them), as transformers'
// apply_chat_template(tokenize=True) does.
EncodedPrompt encode_prompt(const Tokenizer& tok, const std::filesystem::path& model_dir,
                            const TextPromptOptions& opts);

}  // namespace inferdesk::cli
