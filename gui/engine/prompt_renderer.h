// PromptRenderer: a loaded model's tokenizer and chat template, for turning a conversation into
// the prompt text the model was trained on and its token ids. Immutable after load(), so one
// instance is shared (std::shared_ptr<const PromptRenderer>) between the engine controller's
// thread and the GUI thread; every method is const and thread-safe.
//
// User-typed text never becomes control tokens: a message whose content contains special-token
// strings (e.g. "<|im_end|>") is tokenized as plain text and spliced between the template's own
// parts, which are tokenized with special tokens parsed (what transformers' apply_chat_template
// gives for text without such strings).
#pragma once

#include <QString>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/chat/model_templates.h"
#include "core/tokenizer/tokenizer.h"

namespace inferdesk::gui {

struct PromptMessage {
  QString role;  // "system", "user", "assistant"
  QString content;
};

struct RenderedPrompt {
  QString text;              // the chat template's output (what is tokenized)
  std::vector<int32_t> ids;  // its token ids
  QString warning;           // e.g. "no chat template: messages joined as plain text"
  QString error;             // non-empty when nothing could be rendered
  bool ok() const { return error.isEmpty(); }
};

class PromptRenderer {
 public:
  // Reads DIR's tokenizer and chat templates. A folder without a tokenizer gives a renderer that
  // can render nothing (hasTokenizer() false; render() explains); a folder without a chat
  // template joins messages as plain text (with a warning). Never throws.
  static std::shared_ptr<const PromptRenderer> load(const std::filesystem::path& dir);

  bool hasTokenizer() const { return tokenizer_.has_value(); }
  bool hasChatTemplate() const { return template_.has_value(); }
  // Why there is no tokenizer / template ("" when there is).
  const QString& tokenizerProblem() const { return tokenizer_problem_; }
  const QString& templateProblem() const { return template_problem_; }
  const Tokenizer* tokenizer() const { return tokenizer_ ? &*tokenizer_ : nullptr; }

  // Renders `messages` with the model's default template (add_generation_prompt as given;
  // templateKwargsJson: a JSON object of extra template variables such as
  // {"enable_thinking": false}, or empty) and tokenizes the result.
  RenderedPrompt render(const std::vector<PromptMessage>& messages, const QString& templateKwargsJson = {},
                        bool addGenerationPrompt = true) const;
  // Plain text → ids without special tokens (special-token strings stay text); empty without a
  // tokenizer.
  std::vector<int32_t> encode(const QString& text) const;
  int countTokens(const QString& text) const { return static_cast<int>(encode(text).size()); }

 private:
  PromptRenderer() = default;
  RenderedPrompt renderWithTemplate(const std::vector<PromptMessage>& messages, const chat::Json& kwargs,
                                    bool addGenerationPrompt) const;
  std::vector<int32_t> spliceUserText(const std::vector<PromptMessage>& messages, const chat::Json& kwargs,
                                      bool addGenerationPrompt, const std::string& rendered) const;

  std::optional<Tokenizer> tokenizer_;
  std::optional<chat::ModelChatTemplates> templates_;
  std::optional<chat::ChatTemplate> template_;
  QString tokenizer_problem_;
  QString template_problem_;
};

}  // namespace inferdesk::gui
