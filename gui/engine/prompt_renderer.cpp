#include "gui/engine/prompt_renderer.h"

#include <QStringList>

#include <algorithm>
#include <exception>

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
    out.push_back({{"role", utf8(messages[i].role)},
                   {"content", with_markers ? marker(i) : utf8(messages[i].content)}});
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

RenderedPrompt PromptRenderer::render(const std::vector<PromptMessage>& messages,
                                      const QString& templateKwargsJson,
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

RenderedPrompt PromptRenderer::renderWithTemplate(const std::vector<PromptMessage>& messages,
                                                  const chat::Json& kwargs,
                                                  bool addGenerationPrompt) const {
  RenderedPrompt out;
  const std::string rendered =
      chat::apply_chat_template(*template_, to_json(messages, false), nullptr, addGenerationPrompt,
                                templates_->bos_token, templates_->eos_token, kwargs);
  out.text = QString::fromStdString(rendered);
  const bool user_has_control = std::any_of(messages.begin(), messages.end(), [&](const auto& m) {
    const std::string c = utf8(m.content);
    return !c.empty() && tokenizer_->encode(c, kParseSpecial) != tokenizer_->encode(c, kSpecialAsText);
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

// Renders again with a marker in place of each message's content; the text between markers is the
// template's own and is tokenized with special tokens parsed, each message's content as plain text.
// Empty when the template does not place every content exactly once and unchanged.
std::vector<int32_t> PromptRenderer::spliceUserText(const std::vector<PromptMessage>& messages,
                                                    const chat::Json& kwargs,
                                                    bool addGenerationPrompt,
                                                    const std::string& rendered) const {
  const std::string skeleton =
      chat::apply_chat_template(*template_, to_json(messages, true), nullptr, addGenerationPrompt,
                                templates_->bos_token, templates_->eos_token, kwargs);
  struct Spot {
    size_t at;
    size_t index;
  };
  std::vector<Spot> spots;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string m = marker(i);
    const size_t at = skeleton.find(m);
    if (at == std::string::npos) {
      if (messages[i].content.isEmpty()) continue;
      return {};  // the template dropped or transformed this message
    }
    if (skeleton.find(m, at + 1) != std::string::npos) return {};
    spots.push_back({at, i});
  }
  std::sort(spots.begin(), spots.end(), [](const Spot& a, const Spot& b) { return a.at < b.at; });
  std::vector<int32_t> ids;
  std::string rebuilt;
  size_t pos = 0;
  auto append = [&](const std::string& text, EncodeOptions how) {
    const auto part = tokenizer_->encode(text, how);
    ids.insert(ids.end(), part.begin(), part.end());
    rebuilt += text;
  };
  for (const Spot& s : spots) {
    append(skeleton.substr(pos, s.at - pos), kParseSpecial);
    append(utf8(messages[s.index].content), kSpecialAsText);
    pos = s.at + marker(s.index).size();
  }
  append(skeleton.substr(pos), kParseSpecial);
  if (rebuilt != rendered) return {};
  return ids;
}

}  // namespace inferdesk::gui
