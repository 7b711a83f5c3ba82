// Tokenizing a rendered chat prompt so that the text people typed stays text: the template's own
// parts are tokenized with special-token strings parsed (they are the template's control tokens),
// every message's content with special-token strings kept plain (a user who types "<|im_end|>"
// gets those characters, not the control token). Used by inferdesk-cli and the desktop app.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace inferdesk::chat {

// Whether `text` contains strings the tokenizer turns into special tokens (it encodes differently
// with special tokens parsed and kept as text).
bool has_special_token_text(const Tokenizer& tok, std::string_view text);

// One content the template placed: `marker` is what the template was rendered with instead of
// `text` (a string no template or user text contains).
struct PromptPart {
  std::string marker;
  std::string text;
};

// `skeleton` is the template rendered with each part's text replaced by its marker; `rendered`
// the real prompt. Returns the ids of `rendered`: the text around the markers with special tokens
// parsed, each part's text with them kept plain. Empty when the template does not place every
// non-empty text exactly once and unchanged (putting the texts back does not give `rendered`).
std::vector<int32_t> tokenize_with_plain_parts(const Tokenizer& tok, const std::string& rendered,
                                               const std::string& skeleton, const std::vector<PromptPart>& parts);

}  // namespace inferdesk::chat
