// Context-length handling for the chat page: before a reply is requested, the conversation is
// rendered with the model's chat template and tokenized; when prompt + max_tokens would not fit
// in the model's context, the oldest turns are left out of the prompt (never the system prompt,
// never the last user message and what follows it) and the result says, in words for the user,
// what was left out. When even the shortest prompt does not fit, nothing is sent and `error`
// says why. No widgets, no engine: the renderer is passed in, so tests can count tokens their way.
#pragma once

#include <QString>

#include <cstdint>
#include <functional>
#include <vector>

#include "gui/engine/prompt_renderer.h"

namespace inferdesk::gui {

struct ContextFit {
  bool ok = false;
  std::vector<PromptMessage> messages;  // what is sent (system prompt + the kept turns)
  RenderedPrompt prompt;                // their rendering (text and ids)
  int promptTokens = 0;
  int droppedMessages = 0;  // left out, counted from the oldest non-system message
  int droppedTurns = 0;     // a turn: a user message and the replies after it
  QString notice;           // set when something was left out
  QString error;            // set when !ok
};

using RenderFunction = std::function<RenderedPrompt(const std::vector<PromptMessage>&)>;

// `conversation`: optional system message first, then the turns, ending with the user message the
// reply is for. contextLength: the longest request the engine takes (prompt + generated tokens).
ContextFit fitToContext(const std::vector<PromptMessage>& conversation, int contextLength, int maxTokens,
                        const RenderFunction& render);

// First words of a text for messages ("Tell me about the…"), at most `maxChars` characters.
QString excerpt(const QString& text, int maxChars = 40);

}  // namespace inferdesk::gui
