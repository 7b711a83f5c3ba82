#include "gui/engine/prompt_renderer.h"

#include <QStringList>

#include <algorithm>
#include <exception>

#include "core/chat/prompt_tokens.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk::gui {

namespace {

constexpr EncodeOptions kParseSpecial{false, false};
constexpr EncodeOptions kSpecialAsText{false, true};

std::string utf8(const QString& s) { return s.toStdString(); }

QString describe(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e))
    return QString::fromStdString(std::string(to_string(err->code())) + ": " + err->what());
  return QString::fromUtf8(e.what());
}

// A marker no user text or template contains; messages are swapped for it to find where the
// template put each message's content.
std::string marker(size_t i) { return "\x1e\x1f@inferdesk-msg-" + std::to_string(i) + "@\x1f\x1e"; }

chat::Json to_json(const std::vector<PromptMessage>& messages, bool with_markers) {
  chat::Json out = chat::Json::array();
  for (size_t i = 0; i < messages.size(); ++i)
    out.push_back(
        {{"role", utf8(messages[i].role)}, {"content", with_markers ? marker(i) : utf8(messages[i].content)}});
  return out;
}

}  // namespace

std::shared_ptr<const PromptRenderer> PromptRenderer::load(const std::filesystem::path& dir) {
  std::shared_ptr<PromptRenderer> r(new PromptRenderer());
  try {
    r->tokenizer_ = Tokenizer::from_dir(dir);
  } catch (const std::exception& e) {
    r->tokenizer_problem_ = describe(e);
  }
  try {
    r->templates_ = chat::load_model_chat_templates(dir);
    r->template_ = r->templates_->parse(std::nullopt, /*has_tools=*/false);
  } catch (const std::exception& e) {
    r->template_problem_ = describe(e);
    r->template_.reset();
  }
  return r;
}

std::vector<int32_t> PromptRenderer::encode(const QString& text) const {
  if (!tokenizer_) return {};
  return tokenizer_->encode(utf8(text), kSpecialAsText);
}

RenderedPrompt PromptRenderer::render(const std::vector<PromptMessage>& messages, const QString& templateKwargsJson,
                                      bool addGenerationPrompt) const {
  RenderedPrompt out;
  if (!tokenizer_) {
    out.error = "this model has no usable tokenizer (" + tokenizer_problem_ + ")";
    return out;
  }
  if (messages.empty()) {
    out.error = "there is no message to render";
    return out;
  }
  try {
    chat::Json kwargs = chat::Json::object();
    if (!templateKwargsJson.trimmed().isEmpty()) {
      kwargs = parse_untrusted_ordered_json(utf8(templateKwargsJson), "chat template options");
      if (!kwargs.is_object())
        throw Error(ErrorCode::InvalidArgument,
                    "chat template options must be a JSON object, e.g. {\"enable_thinking\": false}");
    }
    if (template_) return renderWithTemplate(messages, kwargs, addGenerationPrompt);
    // No template: the contents one after the other, user text never parsed as control tokens.
    QStringList parts;
    for (const auto& m : messages) parts << m.content;
    out.text = parts.join("\n\n");
    out.ids = tokenizer_->encode(utf8(out.text), EncodeOptions{true, true});
    out.warning = "this model has no chat template: the messages are joined as plain text";
  } catch (const std::exception& e) {
    out = RenderedPrompt{};
    out.error = describe(e);
  }
  return out;
}

RenderedPrompt PromptRenderer::renderWithTemplate(const std::vector<PromptMessage>& messages, const chat::Json& kwargs,
                                                  bool addGenerationPrompt) const {
  RenderedPrompt out;
  const std::string rendered = chat::apply_chat_template(*template_, to_json(messages, false), nullptr,
                                                         addGenerationPrompt, templates_->bos_token,
                                                         templates_->eos_token, kwargs);
  out.text = QString::fromStdString(rendered);
  const bool user_has_control = std::any_of(messages.begin(), messages.end(), [&](const auto& m) {
    return chat::has_special_token_text(*tokenizer_, utf8(m.content));
  });
  if (user_has_control) {
    out.ids = spliceUserText(messages, kwargs, addGenerationPrompt, rendered);
    if (!out.ids.empty()) return out;
    out.warning = "the chat template rewrites message text, so special-token strings typed in a "
                  "message are read as control tokens";
  }
  out.ids = tokenizer_->encode(rendered, kParseSpecial);
  return out;
}

// Renders again with a marker in place of each message's content and tokenizes the template's own
// text with special tokens parsed, each content as plain text (chat::tokenize_with_plain_parts).
// Empty when the template does not place every content exactly once and unchanged.
std::vector<int32_t> PromptRenderer::spliceUserText(const std::vector<PromptMessage>& messages,
                                                    const chat::Json& kwargs, bool addGenerationPrompt,
                                                    const std::string& rendered) const {
  const std::string skeleton = chat::apply_chat_template(*template_, to_json(messages, true), nullptr,
                                                         addGenerationPrompt, templates_->bos_token,
                                                         templates_->eos_token, kwargs);
  std::vector<chat::PromptPart> parts;
  for (size_t i = 0; i < messages.size(); ++i) parts.push_back({marker(i), utf8(messages[i].content)});
  return chat::tokenize_with_plain_parts(*tokenizer_, rendered, skeleton, parts);
}

}  // namespace inferdesk::gui
